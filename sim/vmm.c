/*
 * vmm.c - virtual memory management: physical handles (cuMemCreate,
 * cuMemRelease; on the device, or on the host where the driver allows it),
 * address reservations and mappings (cuMemAddressReserve/Free, cuMemMap,
 * cuMemUnmap, cuMemSetAccess). A handle's memory is charged at creation
 * and given back once it is released and unmapped. Shareable handles are
 * ipc.c's.
 */
#include "driver.h"

#include <stdlib.h>

static struct sim_vmm *g_vmms;
static struct sim_reservation *g_resv;
static struct sim_mapping *g_maps;

struct sim_vmm *sim_vmm_lookup(CUmemGenericAllocationHandle h)
{
	for (struct sim_vmm *v = g_vmms; v; v = v->next)
		if ((CUmemGenericAllocationHandle)(uintptr_t)v == h)
			return v->released ? NULL : v;
	return NULL;
}

static void vmm_put(struct sim_vmm *v)
{
	if (v->released && v->maps == 0 && v->charged) {
		sim_uncharge(&g_sim.dev[v->dev], v->charged);
		v->charged = 0;
	}
	if (v->released && v->maps == 0 && v->host_charged) {
		sim_host_unpin(v->host_charged);
		v->host_charged = 0;
	}
}

static int prop_ok(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return 0;
	switch (prop->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return prop->location.id >= 0 && prop->location.id < g_sim.ndev;
	case CU_MEM_LOCATION_TYPE_HOST:
		return sim_config()->host_vmm;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA: /* one NUMA node, 0 */
		return sim_config()->host_vmm && prop->location.id == 0;
	default: /* HOST_NUMA_CURRENT included: cuMemCreate refuses it */
		return 0;
	}
}

CUresult simi_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                            CUmemAllocationGranularity_flags option)
{
	SIM_LOCK_INIT();
	if (!granularity || !prop_ok(prop) ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*granularity = SIM_GRANULARITY;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * Device locations take device memory. Host locations (HOST, HOST_NUMA;
 * drivers with CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
 * else CUDA_ERROR_INVALID_VALUE as for any unknown location) take pinned
 * host memory, are not IPC capable (requestedHandleTypes must be 0, as
 * cuda.h says), and fail with CUDA_ERROR_OUT_OF_MEMORY when it cannot be
 * pinned.
 */
CUresult simi_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                          const CUmemAllocationProp *prop, unsigned long long flags)
{
	SIM_LOCK_INIT();
	if (!handle || !prop_ok(prop) || flags != 0 || size == 0 || size % SIM_GRANULARITY)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	int host = prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE;
	/* Host memory takes no IPC handle types, and no GPUDirect RDMA or
	 * compression flag (driver 580 on an H200 refuses the flag PyTorch's
	 * expandable segments set; bench/gpu/driver_facts). */
	if (host && (prop->requestedHandleTypes != 0 || prop->allocFlags.gpuDirectRDMACapable ||
	             prop->allocFlags.compressionType))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_vmm *v = calloc(1, sizeof(*v));
	if (!v)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	v->dev = host ? -1 : prop->location.id;
	v->size = size;
	v->handle_types = prop->requestedHandleTypes;
	if (host) {
		if (!sim_host_pin(size)) {
			free(v);
			SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
		}
		v->host_charged = size;
	} else {
		if (sim_charge(&g_sim.dev[v->dev], size) != CUDA_SUCCESS) {
			free(v);
			SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
		}
		v->charged = size;
	}
	v->next = g_vmms;
	g_vmms = v;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The memory itself goes once every mapping of it is gone. */
CUresult simi_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	SIM_LOCK_INIT();
	struct sim_vmm *v = sim_vmm_lookup(handle);
	if (!v)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	v->released = 1;
	vmm_put(v);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                  unsigned long long flags)
{
	(void)addr; /* a hint only */
	SIM_LOCK_INIT();
	if (!ptr || size == 0 || size % SIM_GRANULARITY || flags != 0 ||
	    (alignment & (alignment - 1)))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_reservation *r = calloc(1, sizeof(*r));
	if (!r)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	/* Address space only, from device 0's range: nothing is charged. */
	r->ptr = sim_addr_alloc(&g_sim.dev[0], size, alignment ? alignment : SIM_GRANULARITY);
	if (!r->ptr) {
		free(r);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	r->size = size;
	r->next = g_resv;
	g_resv = r;
	*ptr = r->ptr;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	SIM_LOCK_INIT();
	for (struct sim_reservation **pp = &g_resv; *pp; pp = &(*pp)->next) {
		struct sim_reservation *r = *pp;
		if (r->ptr != ptr || r->size != size)
			continue;
		for (struct sim_mapping *mp = g_maps; mp; mp = mp->next)
			if (mp->ptr >= ptr && mp->ptr < ptr + size)
				SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE); /* still mapped */
		*pp = r->next;
		free(r);
		SIM_UNLOCK_RETURN(CUDA_SUCCESS);
	}
	SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
}

static int in_reservation(CUdeviceptr ptr, size_t size)
{
	for (struct sim_reservation *r = g_resv; r; r = r->next)
		if (ptr >= r->ptr && size <= r->size && ptr - r->ptr <= r->size - size)
			return 1;
	return 0;
}

CUresult simi_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	SIM_LOCK_INIT();
	struct sim_vmm *v = sim_vmm_lookup(handle);
	if (!v || flags != 0 || size == 0 || size % SIM_GRANULARITY || offset % SIM_GRANULARITY ||
	    offset > v->size || size > v->size - offset || !in_reservation(ptr, size))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct sim_mapping *mp = g_maps; mp; mp = mp->next)
		if (ptr < mp->ptr + mp->size && mp->ptr < ptr + size)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_mapping *mp = calloc(1, sizeof(*mp));
	if (!mp)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	mp->ptr = ptr;
	mp->size = size;
	mp->h = v;
	mp->next = g_maps;
	g_maps = mp;
	v->maps++;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Unmaps every mapping inside [ptr, ptr+size); the range must cover whole
 * mappings and at least one. */
CUresult simi_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	int found = 0;
	SIM_LOCK_INIT();
	if (size == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct sim_mapping *mp = g_maps; mp; mp = mp->next) {
		int overlap = ptr < mp->ptr + mp->size && mp->ptr < ptr + size;
		int inside = mp->ptr >= ptr && mp->ptr + mp->size <= ptr + size;
		if (overlap && !inside)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		found |= inside;
	}
	if (!found)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct sim_mapping **pp = &g_maps; *pp;) {
		struct sim_mapping *mp = *pp;
		if (mp->ptr >= ptr && mp->ptr + mp->size <= ptr + size) {
			*pp = mp->next;
			mp->h->maps--;
			vmm_put(mp->h);
			free(mp);
		} else {
			pp = &mp->next;
		}
	}
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                             size_t count)
{
	size_t covered = 0;
	SIM_LOCK_INIT();
	if (!desc || count == 0 || size == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (size_t i = 0; i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    desc[i].location.id < 0 || desc[i].location.id >= g_sim.ndev)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
		if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	}
	for (struct sim_mapping *mp = g_maps; mp; mp = mp->next)
		if (mp->ptr >= ptr && mp->ptr + mp->size <= ptr + size)
			covered += mp->size;
	if (covered != size)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE); /* part of the range is unmapped */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

void sim_vmm_add(struct sim_vmm *v)
{
	v->next = g_vmms;
	g_vmms = v;
}

struct sim_mapping *sim_vmm_mapping_at(CUdeviceptr p, struct sim_reservation **r)
{
	*r = NULL;
	for (struct sim_mapping *mp = g_maps; mp; mp = mp->next)
		if (p >= mp->ptr && p - mp->ptr < mp->size) {
			for (struct sim_reservation *v = g_resv; v; v = v->next)
				if (p >= v->ptr && p - v->ptr < v->size)
					*r = v;
			return mp;
		}
	return NULL;
}

void sim_vmm_after_fork(void)
{
	SIM_FREE_LIST(struct sim_vmm, g_vmms);
	SIM_FREE_LIST(struct sim_reservation, g_resv);
	SIM_FREE_LIST(struct sim_mapping, g_maps);
}
