/*
 * query.c - what the program can ask about memory: cuMemGetInfo (the card's
 * free and total bytes, every process's usage counted), and what a pointer
 * addresses (cuMemGetAddressRange, cuPointerGetAttribute[s]): a device
 * allocation, pinned host memory or a virtual-memory mapping.
 */
#include "driver.h"

#include <string.h>

/* What a pointer addresses, for cuMemGetAddressRange and the pointer
 * attributes: a device allocation, pinned host memory, or a virtual-memory
 * mapping (of a handle on a device or a host location). */
struct ptr_info {
	struct sim_alloc *a;
	struct sim_host *h;
	struct sim_mapping *mp;
	struct sim_reservation *r; /* the mapping's reservation */
};

static int contains(struct sim_alloc *a, void *p)
{
	CUdeviceptr ptr = *(const CUdeviceptr *)p;
	return ptr >= a->ptr && ptr - a->ptr < a->size;
}

static int ptr_lookup(CUdeviceptr p, struct ptr_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	if ((pi->a = sim_alloc_each(contains, &p)) != NULL)
		return 1;
	if ((pi->h = sim_host_find((const void *)(uintptr_t)p, 0)) != NULL)
		return 1;
	return (pi->mp = sim_vmm_mapping_at(p, &pi->r)) != NULL;
}

/* The allocation (or host allocation, or mapping) that contains dptr. */
CUresult simi_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct ptr_info pi;
	SIM_LOCK_INIT();
	if (!ptr_lookup(dptr, &pi))
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_FOUND);
	CUdeviceptr base = pi.a ? pi.a->ptr : pi.h ? (CUdeviceptr)(uintptr_t)pi.h->p : pi.mp->ptr;
	size_t size = pi.a ? pi.a->size : pi.h ? pi.h->size : pi.mp->size;
	if (pbase)
		*pbase = base;
	if (psize)
		*psize = size;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * One attribute of a known pointer, as cuda.h documents them. Device
 * memory: MEMORY_TYPE DEVICE, no host pointer. Pinned host memory (UVA: the
 * device sees it at its host address): MEMORY_TYPE HOST, both pointers the
 * same, never IPC-capable. A mapping of a virtual-memory handle: the type of
 * its location (HOST for host locations: an assumption, not checked on a
 * real driver), RANGE_* the reservation, not the mapping.
 */
static CUresult ptr_attr(const struct ptr_info *pi, CUpointer_attribute attr, void *data,
                         CUdeviceptr p)
{
	struct sim_ctx *cur = sim_cur_ctx(&(CUresult){0});
	const struct sim_alloc *a = pi->a;
	const struct sim_host *h = pi->h;
	int host = h || (pi->mp && pi->mp->h->dev < 0);
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)(a ? a->ctx : h ? h->ctx : cur);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!h && !(a && a->managed))
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)(uintptr_t)p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = a && a->managed;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a                               ? a->dev
		               : pi->mp && pi->mp->h->dev >= 0 ? pi->mp->h->dev
		               : h && h->ctx                   ? h->ctx->dev
		               : cur                           ? cur->dev
		                                               : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(int *)data = a && a->kind == SIM_ALLOC_LINEAR && !a->managed;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a   ? a->ptr
		                       : h ? (CUdeviceptr)(uintptr_t)h->p
		                           : (pi->r ? pi->r->ptr : pi->mp->ptr);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a ? a->size : h ? h->size : (pi->r ? pi->r->size : pi->mp->size);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = 1;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data =
		    pi->mp ? (unsigned long long)pi->mp->h->handle_types : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data =
		    a && a->kind == SIM_ALLOC_ASYNC ? (CUmemoryPool)a->pool : NULL;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* An unknown pointer: CUDA_ERROR_INVALID_VALUE. */
CUresult simi_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct ptr_info pi;
	SIM_LOCK_INIT();
	if (!data)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!ptr_lookup(ptr, &pi))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	SIM_UNLOCK_RETURN(ptr_attr(&pi, attribute, data, ptr));
}

/* The bytes an attribute's value takes (zeroed when it does not apply). */
static size_t attr_width(CUpointer_attribute attr)
{
	return attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ||
	               attr == CU_POINTER_ATTRIBUTE_IS_MANAGED ||
	               attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ||
	               attr == CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE ||
	               attr == CU_POINTER_ATTRIBUTE_MAPPED
	           ? sizeof(int)
	           : sizeof(void *);
}

/* Unlike cuPointerGetAttribute, an unknown pointer is no error: every
 * attribute reads as zero (MEMORY_TYPE 0, NULL pointers, DEVICE_ORDINAL
 * -2), as cuda.h documents. An attribute that does not apply reads as zero
 * too. */
CUresult simi_cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                     void **data, CUdeviceptr ptr)
{
	struct ptr_info pi;
	SIM_LOCK_INIT();
	if (!attributes || !data || numAttributes == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int known = ptr_lookup(ptr, &pi);
	for (unsigned i = 0; i < numAttributes; i++) {
		size_t width = attr_width(attributes[i]);
		if (!data[i])
			continue;
		if (!known || ptr_attr(&pi, attributes[i], data[i], ptr) != CUDA_SUCCESS) {
			memset(data[i], 0, width);
			if (!known && attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
				*(int *)data[i] = -2;
		}
	}
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemGetAddressRange(unsigned int *pbase, unsigned int *psize, unsigned int dptr)
{
	CUdeviceptr base;
	size_t size;
	CUresult rc = simi_cuMemGetAddressRange_v2(&base, &size, dptr);
	if (rc == CUDA_SUCCESS) {
		if (pbase)
			*pbase = (unsigned int)base;
		if (psize)
			*psize = (unsigned int)size;
	}
	return rc;
}

CUresult simi_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!free_bytes || !total)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_card *card = &sim_ctx_dev(c)->card;
	sim_card_lock(card);
	uint64_t used = sim_card_used(card, 1), t = card->file->total, limit = UINT64_MAX,
	         room = UINT64_MAX;
	if (card->slot >= 0)
		sim_limit_room(card, card->file->slots[card->slot].cgroup, &limit, &room);
	sim_card_unlock(card);
	/* Inside a cgroup with a driver limit, the limit is the total. */
	uint64_t f = used >= t ? 0 : t - used;
	*total = limit < t ? limit : t;
	*free_bytes = room < f ? room : f;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The 32-bit form: values above 4 GiB are clamped to UINT_MAX. */
CUresult simi_cuMemGetInfo(unsigned int *free_bytes, unsigned int *total)
{
	size_t f, t;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = simi_cuMemGetInfo_v2(&f, &t);
	if (rc == CUDA_SUCCESS) {
		*free_bytes = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
		*total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
	}
	return rc;
}
