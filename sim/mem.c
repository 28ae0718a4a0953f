/*
 * mem.c - every allocation family of the simulated driver and its physical
 * accounting on the shared card: linear (plain, pitch, managed, the 32-bit
 * forms), stream-ordered with pools, virtual memory, arrays, pinned host,
 * IPC and graph memory nodes.
 *
 * Device pointers are bookkeeping only: plausible, aligned, never reused and
 * never dereferenced. A per-process table maps each to its size and kind, so
 * bad and double frees fail as they do on the real driver. Pinned host memory
 * is real memory the program may use.
 */
#include "driver.h"

#include "common/compiler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum alloc_kind {
	K_LINEAR, /* cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged */
	K_ASYNC,  /* stream-ordered, from a pool */
	K_IPC,    /* cuIpcOpenMemHandle mapping: no usage of its own */
	K_GRAPH,  /* graph memory node allocation, live after a launch */
};

struct sim_pool {
	uint32_t magic;
	int dev;
	int is_default;
	int alive;
	uint64_t reserved, used, reserved_high, used_high, threshold;
	uint64_t max_size; /* CUmemPoolProps.maxSize; 0: the card's size */
	int reuse[4];
	struct sim_pool *next;
};
#define SIM_MAGIC_POOL 0x504f4f4cu

struct gnode {
	int dev;
	size_t size;
	CUdeviceptr dptr;
	int state; /* 0 free, 1 committed (uploaded), 2 launched: owned by the program */
	struct gnode *next;
};

struct graph {
	int alive;
	int has_exec;
	struct gnode *nodes;
	struct graph *next;
};

struct gexec {
	int alive;
	struct graph *graph;
	struct gexec *next;
};

struct alloc {
	CUdeviceptr ptr;
	size_t size;      /* as the program sees it */
	uint64_t charged; /* physical bytes charged for it (K_LINEAR) */
	int kind;
	int dev;
	struct sim_ctx *ctx;
	struct sim_pool *pool; /* K_ASYNC */
	struct gnode *node;    /* K_GRAPH */
	int refs;              /* K_IPC: opens */
	int ipc_pid;           /* K_IPC: exporting process */
	CUdeviceptr ipc_ptr;   /* K_IPC: pointer in the exporter */
	int ipc_exported;      /* K_LINEAR: a handle was taken */
	int managed;           /* K_LINEAR: cuMemAllocManaged */
	struct alloc *next;
};

struct host {
	void *p;
	size_t size;
	int registered; /* cuMemHostRegister (else cuMemHostAlloc/cuMemAllocHost) */
	int with_ctx;   /* cuMemAllocHost: freed with its context (cuCtxDestroy) */
	struct sim_ctx *ctx;
	struct host *next;
};

struct vmm {
	int dev; /* -1: a host location, not device memory */
	size_t size;
	uint64_t charged;
	uint64_t host_charged; /* pinned host bytes (host locations) */
	int handle_types;
	int released;
	int maps;
	struct vmm *next;
};

struct reservation {
	CUdeviceptr ptr;
	size_t size;
	struct reservation *next;
};

struct mapping {
	CUdeviceptr ptr;
	size_t size;
	struct vmm *h;
	struct mapping *next;
};

struct array {
	int mip;
	int dev;
	size_t size;
	struct sim_ctx *ctx;
	int alive;
	struct array *next;
};

#define NBUCKETS 1024
static struct {
	struct alloc *bucket[NBUCKETS];
	struct host *hosts;
	struct sim_pool *pools;
	struct vmm *vmms;
	struct reservation *resv;
	struct mapping *maps;
	struct array *arrays;
	struct graph *graphs;
	struct gexec *execs;
	uint64_t host_pinned; /* pinned host bytes, against VRAMSIM_HOST_PINNABLE */
} m;

/* Pins bytes of host memory, or 0 when the platform's limit
 * (VRAMSIM_HOST_PINNABLE: RLIMIT_MEMLOCK, host RAM) would be passed. */
static int host_pin(uint64_t bytes)
{
	uint64_t limit = sim_config()->host_pinnable;
	if (bytes > limit || m.host_pinned > limit - bytes)
		return 0;
	m.host_pinned += bytes;
	return 1;
}

static void host_unpin(uint64_t bytes)
{
	m.host_pinned -= bytes < m.host_pinned ? bytes : m.host_pinned;
}

static unsigned bucket_of(CUdeviceptr p)
{
	return (unsigned)((p >> 9) ^ (p >> 21)) % NBUCKETS;
}

static struct alloc *alloc_find(CUdeviceptr p)
{
	for (struct alloc *a = m.bucket[bucket_of(p)]; a; a = a->next)
		if (a->ptr == p)
			return a;
	return NULL;
}

static void alloc_insert(struct alloc *a)
{
	unsigned b = bucket_of(a->ptr);
	a->next = m.bucket[b];
	m.bucket[b] = a;
}

static void alloc_remove(struct alloc *a)
{
	for (struct alloc **pp = &m.bucket[bucket_of(a->ptr)]; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			return;
		}
}

static struct sim_dev *ctx_dev(struct sim_ctx *c)
{
	return &g_sim.dev[c->dev];
}

/* This process's ordinal for a physical card (how handles from another
 * process name it); -1 when the card is not visible here. */
static int dev_of_phys(int phys)
{
	int dev = -1;
	for (int i = 0; i < g_sim.ndev; i++)
		if (g_sim.dev[i].phys == phys)
			dev = i;
	return dev;
}

/* ---- pools ---- */

static void pool_note_high(struct sim_pool *p)
{
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
	if (p->used > p->used_high)
		p->used_high = p->used;
}

/* Releases reserved memory down to max(keep, used). */
static void pool_trim(struct sim_pool *p, uint64_t keep)
{
	uint64_t floor = keep > p->used ? keep : p->used;
	if (p->reserved > floor) {
		sim_uncharge(&g_sim.dev[p->dev], p->reserved - floor);
		p->reserved = floor;
	}
}

static struct sim_pool *pool_new(int dev, int is_default)
{
	struct sim_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->magic = SIM_MAGIC_POOL;
	p->dev = dev;
	p->is_default = is_default;
	p->alive = 1;
	p->reuse[1] = p->reuse[2] = p->reuse[3] = 1;
	p->next = m.pools;
	m.pools = p;
	return p;
}

static struct sim_pool *default_pool(int dev)
{
	struct sim_dev *d = &g_sim.dev[dev];
	if (!d->default_pool)
		d->default_pool = pool_new(dev, 1);
	if (!d->cur_pool)
		d->cur_pool = d->default_pool;
	return d->default_pool;
}

static struct sim_pool *pool_lookup(CUmemoryPool h)
{
	for (struct sim_pool *p = m.pools; p; p = p->next)
		if ((CUmemoryPool)p == h)
			return p->alive ? p : NULL;
	return NULL;
}

/* Trims every pool of the device to its release threshold (what a
 * synchronisation does on the real driver). */
void sim_mem_sync(int dev)
{
	for (struct sim_pool *p = m.pools; p; p = p->next)
		if (p->dev == dev && p->alive)
			pool_trim(p, p->threshold);
}

/* ---- context teardown and fork ---- */

static void free_alloc(struct alloc *a);

static void host_unlink(struct host *h)
{
	for (struct host **pp = &m.hosts; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			return;
		}
}

/* Forgets a pinned host record: unpinned, unmapped unless the program's
 * own (registered), freed. */
static void host_drop(struct host *h)
{
	host_unpin(h->size);
	host_unlink(h);
	if (!h->registered)
		munmap(h->p, h->size);
	free(h);
}

void sim_mem_ctx_destroyed(struct sim_ctx *c)
{
	for (unsigned b = 0; b < NBUCKETS; b++) {
		struct alloc *a = m.bucket[b];
		while (a) {
			struct alloc *next = a->next;
			if (a->ctx == c && (a->kind == K_LINEAR || a->kind == K_IPC))
				free_alloc(a);
			a = next;
		}
	}
	for (struct array *ar = m.arrays; ar; ar = ar->next)
		if (ar->alive && ar->ctx == c) {
			ar->alive = 0;
			sim_uncharge(&g_sim.dev[ar->dev], ar->size);
		}
	/* NVIDIA's cuCtxDestroy reference: cuMemAllocHost memory goes with
	 * its context (cuMemHostAlloc's is not said to). */
	for (struct host *h = m.hosts, *next; h; h = next) {
		next = h->next;
		if (h->ctx == c && h->with_ctx)
			host_drop(h);
	}
}

#define FREE_LIST(type, head)                                                                      \
	do {                                                                                       \
		while (head) {                                                                     \
			type *n_ = (head)->next;                                                   \
			free(head);                                                                \
			(head) = n_;                                                               \
		}                                                                                  \
	} while (0)

void sim_mem_reset_after_fork(void)
{
	for (unsigned b = 0; b < NBUCKETS; b++)
		FREE_LIST(struct alloc, m.bucket[b]);
	/* Pinned host memory stays mapped in the child (it is ordinary memory),
	 * but is no longer the driver's to free. */
	FREE_LIST(struct host, m.hosts);
	FREE_LIST(struct sim_pool, m.pools);
	FREE_LIST(struct vmm, m.vmms);
	FREE_LIST(struct reservation, m.resv);
	FREE_LIST(struct mapping, m.maps);
	FREE_LIST(struct array, m.arrays);
	for (struct graph *g = m.graphs; g; g = g->next)
		FREE_LIST(struct gnode, g->nodes);
	FREE_LIST(struct graph, m.graphs);
	FREE_LIST(struct gexec, m.execs);
	m.host_pinned = 0;
}

/* ---- linear memory ---- */

/* What a linear block takes on the card (charged): over 1 MiB, whole 2 MiB
 * pages; smaller blocks share pages and take their size (driver 580 on an
 * H200, bench/gpu/driver_facts; its first small block takes a whole page,
 * which is not modelled). */
static size_t linear_charge(size_t size)
{
	return size > ((size_t)1 << 20) ? sim_round_up(size, SIM_GRANULARITY) : size;
}

/* cuMemAlloc and its kin are "potentially unsafe" during capture (cuda.h,
 * cuThreadExchangeStreamCaptureMode: "a call to cudaMalloc may be unsafe"). */
static CUresult linear_alloc(CUdeviceptr *dptr, size_t size, size_t charge, int low)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	struct sim_dev *d;
	struct alloc *a;
	CUdeviceptr p;
	if (!c || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		return rc;
	d = ctx_dev(c);
	if (low) {
		p = sim_round_up(g_sim.low_next, 512);
		if (p + size > 0xf0000000ull)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		p = sim_addr_alloc(d, size, 512);
		if (!p)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_charge(d, charge);
	if (rc != CUDA_SUCCESS) {
		free(a);
		return rc;
	}
	if (low)
		g_sim.low_next = p + sim_round_up(size, 512);
	a->ptr = p;
	a->size = size;
	a->charged = charge;
	a->kind = K_LINEAR;
	a->dev = c->dev;
	a->ctx = c;
	alloc_insert(a);
	*dptr = p;
	return CUDA_SUCCESS;
}

CUresult simi_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	SIM_UNLOCK_RETURN(linear_alloc(dptr, bytesize, linear_charge(bytesize), 0));
}

CUresult simi_cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
	CUdeviceptr p;
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = linear_alloc(&p, bytesize, linear_charge(bytesize), 1);
	if (rc == CUDA_SUCCESS)
		*dptr = (unsigned int)p;
	SIM_UNLOCK_RETURN(rc);
}

#define SIM_PITCH_ALIGN 512

CUresult simi_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                 size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch;
	SIM_LOCK_INIT();
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	pitch = sim_round_up(WidthInBytes, SIM_PITCH_ALIGN);
	if (pitch < WidthInBytes || Height > SIZE_MAX / pitch)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	CUresult rc = linear_alloc(dptr, pitch * Height, linear_charge(pitch * Height), 0);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuMemAllocPitch(unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                              unsigned int Height, unsigned int ElementSizeBytes)
{
	size_t pitch;
	CUdeviceptr p;
	SIM_LOCK_INIT();
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	pitch = sim_round_up(WidthInBytes, SIM_PITCH_ALIGN);
	if ((uint64_t)pitch * Height > 0xffffffffu)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	CUresult rc = linear_alloc(&p, pitch * Height, linear_charge(pitch * Height), 1);
	if (rc == CUDA_SUCCESS) {
		*dptr = (unsigned int)p;
		*pPitch = (unsigned int)pitch;
	}
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0 ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = linear_alloc(dptr, bytesize, bytesize, 0);
	if (rc == CUDA_SUCCESS)
		alloc_find(*dptr)->managed = 1;
	SIM_UNLOCK_RETURN(rc);
}

static void free_alloc(struct alloc *a)
{
	struct sim_dev *d = &g_sim.dev[a->dev];
	alloc_remove(a);
	switch (a->kind) {
	case K_LINEAR:
		sim_uncharge(d, a->charged);
		break;
	case K_ASYNC:
		a->pool->used -= a->size;
		if (!a->pool->alive && a->pool->used == 0)
			pool_trim(a->pool, 0);
		break;
	case K_GRAPH:
		a->node->state = 0;
		d->graph_in_use -= a->size;
		break;
	default:
		break;
	}
	free(a);
}

/* cuMemFree: linear, stream-ordered (synchronously) and graph allocations. */
static CUresult mem_free(CUdeviceptr dptr)
{
	struct alloc *a;
	if (dptr == 0)
		return CUDA_SUCCESS; /* freeing NULL is a no-op, as cudaFree(NULL) */
	a = alloc_find(dptr);
	if (!a || a->kind == K_IPC)
		return CUDA_ERROR_INVALID_VALUE;
	free_alloc(a);
	return CUDA_SUCCESS;
}

CUresult simi_cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc) || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	SIM_UNLOCK_RETURN(mem_free(dptr));
}

CUresult simi_cuMemFree(unsigned int dptr)
{
	return simi_cuMemFree_v2(dptr);
}

static struct host *host_find(const void *p, int exact);

/* What a pointer addresses, for cuMemGetAddressRange and the pointer
 * attributes: a device allocation, pinned host memory, or a virtual-memory
 * mapping (of a handle on a device or a host location). */
struct ptr_info {
	struct alloc *a;
	struct host *h;
	struct mapping *mp;
	struct reservation *r; /* the mapping's reservation */
};

static int ptr_lookup(CUdeviceptr p, struct ptr_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct alloc *a = m.bucket[b]; a; a = a->next)
			if (p >= a->ptr && p - a->ptr < a->size) {
				pi->a = a;
				return 1;
			}
	if ((pi->h = host_find((const void *)(uintptr_t)p, 0)) != NULL)
		return 1;
	for (struct mapping *mp = m.maps; mp; mp = mp->next)
		if (p >= mp->ptr && p - mp->ptr < mp->size) {
			pi->mp = mp;
			for (struct reservation *r = m.resv; r; r = r->next)
				if (p >= r->ptr && p - r->ptr < r->size)
					pi->r = r;
			return 1;
		}
	return 0;
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
	const struct alloc *a = pi->a;
	const struct host *h = pi->h;
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
		*(int *)data = a && a->kind == K_LINEAR && !a->managed;
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
		*(CUmemoryPool *)data = a && a->kind == K_ASYNC ? (CUmemoryPool)a->pool : NULL;
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
		size_t width =
		    attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ||
		            attributes[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED ||
		            attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ||
		            attributes[i] == CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE ||
		            attributes[i] == CU_POINTER_ATTRIBUTE_MAPPED
		        ? sizeof(int)
		        : sizeof(void *);
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

CUresult simi_cuMemGetInfo_v2(size_t *free_, size_t *total)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!free_ || !total)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_card *card = &ctx_dev(c)->card;
	sim_card_lock(card);
	uint64_t used = sim_card_used(card, 1), t = card->file->total;
	sim_card_unlock(card);
	*total = t;
	*free_ = used >= t ? 0 : t - used;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The 32-bit form: values above 4 GiB are clamped to UINT_MAX. */
CUresult simi_cuMemGetInfo(unsigned int *free_, unsigned int *total)
{
	size_t f, t;
	if (!free_ || !total)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = simi_cuMemGetInfo_v2(&f, &t);
	if (rc == CUDA_SUCCESS) {
		*free_ = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
		*total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
	}
	return rc;
}

/* ---- pinned host memory ---- */

static struct host *host_find(const void *p, int exact)
{
	for (struct host *h = m.hosts; h; h = h->next) {
		if (exact ? h->p == p
		          : ((const char *)p >= (const char *)h->p &&
		             (size_t)((const char *)p - (const char *)h->p) < h->size))
			return h;
	}
	return NULL;
}

/* Pinned host memory is real: the program may use it. It synchronises
 * implicitly, like its free (sim_capture_unsafe). What cannot be
 * pinned (VRAMSIM_HOST_PINNABLE) is CUDA_ERROR_OUT_OF_MEMORY, as a real
 * driver answers when the kernel refuses to pin. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags, int with_ctx)
{
	CUresult rc = CUDA_SUCCESS;
	void *p;
	struct host *h;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		return rc;
	if (!pp || bytesize == 0 || (flags & ~7u))
		return CUDA_ERROR_INVALID_VALUE;
	if (!host_pin(bytesize))
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		host_unpin(bytesize);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		munmap(p, bytesize);
		host_unpin(bytesize);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->p = p;
	h->size = bytesize;
	h->ctx = c;
	h->with_ctx = with_ctx;
	h->next = m.hosts;
	m.hosts = h;
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult simi_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	SIM_LOCK_INIT();
	SIM_UNLOCK_RETURN(host_alloc(pp, bytesize, Flags, 0));
}

CUresult simi_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	SIM_LOCK_INIT();
	SIM_UNLOCK_RETURN(host_alloc(pp, bytesize, 0, 1));
}

CUresult simi_cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return simi_cuMemAllocHost_v2(pp, bytesize);
}

/* Synchronises implicitly: refused while a capture forbids that. */
CUresult simi_cuMemFreeHost(void *p)
{
	CUresult rc;
	SIM_LOCK_INIT();
	if ((rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	struct host *h = p ? host_find(p, 1) : NULL;
	if (!h || h->registered)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	host_drop(h);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	if (!p || bytesize == 0 || (Flags & ~0xfu))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct host *h = m.hosts; h; h = h->next)
		if ((char *)p < (char *)h->p + h->size && (char *)h->p < (char *)p + bytesize)
			SIM_UNLOCK_RETURN(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	if (!host_pin(bytesize))
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	struct host *h = calloc(1, sizeof(*h));
	if (!h) {
		host_unpin(bytesize);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	h->p = p;
	h->size = bytesize;
	h->registered = 1;
	h->ctx = sim_cur_ctx(&rc);
	h->next = m.hosts;
	m.hosts = h;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return simi_cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult simi_cuMemHostUnregister(void *p)
{
	SIM_LOCK_INIT();
	struct host *h = p ? host_find(p, 1) : NULL;
	if (!h || !h->registered)
		SIM_UNLOCK_RETURN(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	host_drop(h);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Unified addressing: the device sees pinned host memory at its host address. */
CUresult simi_cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	if (!pdptr || !p || Flags != 0 || !host_find(p, 0))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemHostGetDevicePointer(unsigned int *pdptr, void *p, unsigned int Flags)
{
	CUdeviceptr d;
	if (!pdptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = simi_cuMemHostGetDevicePointer_v2(&d, p, Flags);
	if (rc == CUDA_SUCCESS && d > 0xffffffffu)
		return CUDA_ERROR_INVALID_VALUE; /* not addressable in 32 bits */
	if (rc == CUDA_SUCCESS)
		*pdptr = (unsigned int)d;
	return rc;
}

/* ---- stream-ordered allocation and pools ---- */

/* Reserves whole granules so that sz more bytes fit unused in the pool; 0
 * when maxSize or the card refuses, with the pool and the card untouched. */
static int pool_grow(struct sim_pool *p, struct sim_dev *d, size_t sz)
{
	if (p->reserved - p->used >= sz)
		return 1;
	uint64_t grow = sim_round_up(sz - (p->reserved - p->used), SIM_GRANULARITY);
	if ((p->max_size && grow > p->max_size - p->reserved) ||
	    sim_charge(d, grow) != CUDA_SUCCESS)
		return 0;
	p->reserved += grow;
	return 1;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, struct sim_pool *p,
                           struct sim_ctx *c)
{
	struct sim_dev *d = &g_sim.dev[p->dev];
	size_t sz = sim_round_up(bytesize, 512);
	struct alloc *a;
	CUdeviceptr ptr = sim_addr_alloc(d, sz, 512);
	if (!ptr)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!pool_grow(p, d, sz)) {
		/* Like the driver, give back what the pool holds unused and retry. */
		pool_trim(p, 0);
		if (!pool_grow(p, d, sz)) {
			free(a);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	p->used += sz;
	pool_note_high(p);
	a->ptr = ptr;
	a->size = sz;
	a->kind = K_ASYNC;
	a->dev = p->dev;
	a->ctx = c;
	a->pool = p;
	alloc_insert(a);
	*dptr = ptr;
	return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, int use_pool,
                            CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_pool *p;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_stream_ctx(hStream, &rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!dptr || bytesize == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (use_pool) {
		p = pool_lookup(pool);
		if (!p)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	} else {
		default_pool(c->dev);
		p = g_sim.dev[c->dev].cur_pool;
		if (!p)
			SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	SIM_UNLOCK_RETURN(pool_alloc(dptr, bytesize, p, c));
}

CUresult simi_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, 0, hStream);
}

CUresult simi_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, 0, hStream);
}

CUresult simi_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
	return alloc_async(dptr, bytesize, pool, 1, hStream);
}

CUresult simi_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream)
{
	return alloc_async(dptr, bytesize, pool, 1, hStream);
}

/* Stream-ordered free: pool memory goes back to its pool (still reserved
 * until a synchronisation trims it); other allocations are freed. */
CUresult simi_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	struct alloc *a = alloc_find(dptr);
	/* cuda.h: "During stream capture, this function results in the creation
	 * of a free node and must therefore be passed the address of a graph
	 * allocation." Anything else is refused; driver 580 on an H200 leaves
	 * the capture active (bench/gpu/driver_facts, docs/real-gpu.md). */
	if (sim_stream_capture(hStream) == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
	    (!a || a->kind != K_GRAPH))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!a || a->kind == K_IPC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	free_alloc(a);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return simi_cuMemFreeAsync(dptr, hStream);
}

CUresult simi_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	SIM_LOCK_INIT();
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	if (poolProps->location.id < 0 || poolProps->location.id >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (poolProps->handleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	struct sim_pool *p = pool_new(poolProps->location.id, 0);
	if (!p)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	p->max_size = poolProps->maxSize ? sim_round_up(poolProps->maxSize, SIM_GRANULARITY) : 0;
	*pool = (CUmemoryPool)p;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Unused memory goes back at once; what is still allocated from the pool is
 * released when it is freed, as documented. */
CUresult simi_cuMemPoolDestroy(CUmemoryPool pool)
{
	SIM_LOCK_INIT();
	struct sim_pool *p = pool_lookup(pool);
	if (!p || p->is_default)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	p->alive = 0;
	pool_trim(p, 0);
	struct sim_dev *d = &g_sim.dev[p->dev];
	if (d->cur_pool == p)
		d->cur_pool = d->default_pool;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	SIM_LOCK_INIT();
	struct sim_pool *p = pool_lookup(pool);
	if (!p)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	pool_trim(p, minBytesToKeep);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	SIM_LOCK_INIT();
	struct sim_pool *p = pool_lookup(pool);
	if (!p || !value)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse[attr] = *(int *)value != 0;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->threshold = *(cuuint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		if (*(cuuint64_t *)value != 0)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		p->reserved_high = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(cuuint64_t *)value != 0)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		p->used_high = p->used;
		break;
	default:
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	}
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	SIM_LOCK_INIT();
	struct sim_pool *p = pool_lookup(pool);
	if (!p || !value)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = p->reuse[attr];
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(cuuint64_t *)value = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = p->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = p->used_high;
		break;
	default:
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	}
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	SIM_LOCK_INIT();
	if (!pool_out)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	struct sim_pool *p = default_pool(dev);
	if (!p)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	*pool_out = (CUmemoryPool)p;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	SIM_LOCK_INIT();
	if (!pool)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!default_pool(dev))
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	*pool = (CUmemoryPool)g_sim.dev[dev].cur_pool;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	SIM_LOCK_INIT();
	if (dev < 0 || dev >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	struct sim_pool *p = pool_lookup(pool);
	if (!p || p->dev != dev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	default_pool(dev);
	g_sim.dev[dev].cur_pool = p;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* ---- virtual memory management ---- */

static struct vmm *vmm_lookup(CUmemGenericAllocationHandle h)
{
	for (struct vmm *v = m.vmms; v; v = v->next)
		if ((CUmemGenericAllocationHandle)(uintptr_t)v == h)
			return v->released ? NULL : v;
	return NULL;
}

static void vmm_put(struct vmm *v)
{
	if (v->released && v->maps == 0 && v->charged) {
		sim_uncharge(&g_sim.dev[v->dev], v->charged);
		v->charged = 0;
	}
	if (v->released && v->maps == 0 && v->host_charged) {
		host_unpin(v->host_charged);
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
	struct vmm *v = calloc(1, sizeof(*v));
	if (!v)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	v->dev = host ? -1 : prop->location.id;
	v->size = size;
	v->handle_types = prop->requestedHandleTypes;
	if (host) {
		if (!host_pin(size)) {
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
	v->next = m.vmms;
	m.vmms = v;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The memory itself goes once every mapping of it is gone. */
CUresult simi_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	SIM_LOCK_INIT();
	struct vmm *v = vmm_lookup(handle);
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
	struct reservation *r = calloc(1, sizeof(*r));
	if (!r)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	/* Address space only, from device 0's range: nothing is charged. */
	r->ptr = sim_addr_alloc(&g_sim.dev[0], size, alignment ? alignment : SIM_GRANULARITY);
	if (!r->ptr) {
		free(r);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	r->size = size;
	r->next = m.resv;
	m.resv = r;
	*ptr = r->ptr;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	SIM_LOCK_INIT();
	for (struct reservation **pp = &m.resv; *pp; pp = &(*pp)->next) {
		struct reservation *r = *pp;
		if (r->ptr != ptr || r->size != size)
			continue;
		for (struct mapping *mp = m.maps; mp; mp = mp->next)
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
	for (struct reservation *r = m.resv; r; r = r->next)
		if (ptr >= r->ptr && size <= r->size && ptr - r->ptr <= r->size - size)
			return 1;
	return 0;
}

CUresult simi_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	SIM_LOCK_INIT();
	struct vmm *v = vmm_lookup(handle);
	if (!v || flags != 0 || size == 0 || size % SIM_GRANULARITY || offset % SIM_GRANULARITY ||
	    offset > v->size || size > v->size - offset || !in_reservation(ptr, size))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct mapping *mp = m.maps; mp; mp = mp->next)
		if (ptr < mp->ptr + mp->size && mp->ptr < ptr + size)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct mapping *mp = calloc(1, sizeof(*mp));
	if (!mp)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	mp->ptr = ptr;
	mp->size = size;
	mp->h = v;
	mp->next = m.maps;
	m.maps = mp;
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
	for (struct mapping *mp = m.maps; mp; mp = mp->next) {
		int overlap = ptr < mp->ptr + mp->size && mp->ptr < ptr + size;
		int inside = mp->ptr >= ptr && mp->ptr + mp->size <= ptr + size;
		if (overlap && !inside)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		found |= inside;
	}
	if (!found)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	for (struct mapping **pp = &m.maps; *pp;) {
		struct mapping *mp = *pp;
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
	for (struct mapping *mp = m.maps; mp; mp = mp->next)
		if (mp->ptr >= ptr && mp->ptr + mp->size <= ptr + size)
			covered += mp->size;
	if (covered != size)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE); /* part of the range is unmapped */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* What an exported POSIX fd carries: which allocation on which card. */
struct share_blob {
	uint64_t magic;
	int32_t pid;
	int32_t dev_phys;
	uint64_t id;
	uint64_t size;
};
#define SHARE_MAGIC 0x4552414853534d56ull

CUresult simi_cuMemExportToShareableHandle(void *shareableHandle,
                                           CUmemGenericAllocationHandle handle,
                                           CUmemAllocationHandleType handleType,
                                           unsigned long long flags)
{
	SIM_LOCK_INIT();
	struct vmm *v = vmm_lookup(handle);
	if (!v || !shareableHandle || flags != 0 ||
	    handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    !(v->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct share_blob b = {SHARE_MAGIC, (int32_t)getpid(),
	                       v->dev >= 0 ? g_sim.dev[v->dev].phys : -1, (uint64_t)(uintptr_t)v,
	                       v->size};
	int fd = memfd_create("vramsim-shareable", MFD_CLOEXEC);
	if (fd < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	if (pwrite(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		close(fd);
		SIM_UNLOCK_RETURN(CUDA_ERROR_UNKNOWN);
	}
	*(int *)shareableHandle = fd;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The imported handle names memory another handle already pays for: it adds
 * no usage (and the exporter's usage stays until the exporter releases it). */
CUresult simi_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                             CUmemAllocationHandleType shHandleType)
{
	struct share_blob b;
	int fd = (int)(intptr_t)osHandle;
	SIM_LOCK_INIT();
	if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (pread(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b) || b.magic != SHARE_MAGIC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int dev = dev_of_phys(b.dev_phys);
	if (b.dev_phys >= 0 && dev < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	struct vmm *v = calloc(1, sizeof(*v));
	if (!v)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	v->dev = dev;
	v->size = b.size;
	v->next = m.vmms;
	m.vmms = v;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* ---- arrays ---- */

#define SIM_ARRAY_PAGE ((size_t)64 << 10)

/* Bytes of one level; 0 when the description is invalid or overflows. */
static size_t level_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
	size_t e = vr_array_format_bytes(f), n;
	if (!e || (ch != 1 && ch != 2 && ch != 4) || w == 0)
		return 0;
	n = e * ch;
	if (w > SIZE_MAX / n)
		return 0;
	n *= w;
	if (h && n > SIZE_MAX / h)
		return 0;
	n *= h ? h : 1;
	if (d && n > SIZE_MAX / d)
		return 0;
	return n * (d ? d : 1);
}

static CUresult array_create(void **out, size_t bytes, int mip)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		return rc;
	if (bytes == 0 || bytes > SIZE_MAX - SIM_ARRAY_PAGE)
		return CUDA_ERROR_INVALID_VALUE;
	struct array *a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = sim_round_up(bytes, SIM_ARRAY_PAGE);
	a->dev = c->dev;
	a->ctx = c;
	a->mip = mip;
	if (sim_charge(ctx_dev(c), a->size) != CUDA_SUCCESS) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->alive = 1;
	a->next = m.arrays;
	m.arrays = a;
	*out = a;
	return CUDA_SUCCESS;
}

CUresult simi_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	SIM_LOCK_INIT();
	if (!pHandle || !desc)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	size_t n = level_bytes(desc->Width, desc->Height, 0, desc->Format, desc->NumChannels);
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, n, 0));
}

CUresult simi_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	SIM_LOCK_INIT();
	if (!pHandle || !desc || (desc->Depth && !desc->Height))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	size_t n =
	    level_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, n, 0));
}

CUresult simi_cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                     unsigned int numMipmapLevels)
{
	size_t total = 0, w, h, d;
	SIM_LOCK_INIT();
	if (!pHandle || !desc || numMipmapLevels == 0 || numMipmapLevels > 32)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	w = desc->Width;
	h = desc->Height;
	d = desc->Depth;
	for (unsigned l = 0; l < numMipmapLevels; l++) {
		size_t n = level_bytes(w, h, d, desc->Format, desc->NumChannels);
		if (!n || total > SIZE_MAX - n)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		total += n;
		w = w > 1 ? w / 2 : 1;
		h = h > 1 ? h / 2 : h;
		d = d > 1 ? d / 2 : d;
	}
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, total, 1));
}

static struct array *array_lookup(const void *h, int mip)
{
	for (struct array *a = m.arrays; a; a = a->next)
		if (a == h)
			return a->alive && a->mip == mip ? a : NULL;
	return NULL;
}

static CUresult array_destroy(const void *h, int mip)
{
	SIM_LOCK_INIT();
	struct array *a = array_lookup(h, mip);
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	a->alive = 0;
	sim_uncharge(&g_sim.dev[a->dev], a->size);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuArrayDestroy(CUarray hArray)
{
	return array_destroy(hArray, 0);
}

CUresult simi_cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_destroy(hMipmappedArray, 1);
}

static CUresult array_reqs(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, const void *h, int mip,
                           CUdevice device)
{
	SIM_LOCK_INIT();
	struct array *a = array_lookup(h, mip);
	if (!req)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (device < 0 || device >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	memset(req, 0, sizeof(*req));
	req->size = a->size;
	req->alignment = SIM_ARRAY_PAGE;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                           CUarray array, CUdevice device)
{
	return array_reqs(memoryRequirements, array, 0, device);
}

CUresult
simi_cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                           CUmipmappedArray mipmap, CUdevice device)
{
	return array_reqs(memoryRequirements, mipmap, 1, device);
}

/* ---- IPC ---- */

struct ipc_blob {
	uint64_t magic;
	int32_t pid;
	int32_t dev_phys;
	uint64_t ptr;
	uint64_t size;
};
#define IPC_MAGIC 0x4350494d49534d56ull

CUresult simi_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	struct alloc *a = alloc_find(dptr);
	if (!pHandle || !a || a->kind != K_LINEAR)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct ipc_blob b = {IPC_MAGIC, (int32_t)getpid(), g_sim.dev[a->dev].phys, a->ptr, a->size};
	memset(pHandle, 0, sizeof(*pHandle));
	memcpy(pHandle->reserved, &b, sizeof(b));
	a->ipc_exported = 1;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Opening maps the exporter's memory: no new usage. A second open of the same
 * handle returns the same pointer (reference counted). */
CUresult simi_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	struct ipc_blob b;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	memcpy(&b, handle.reserved, sizeof(b));
	if (!pdptr || b.magic != IPC_MAGIC || (Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (b.pid == (int32_t)getpid())
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT); /* not in the exporting process */
	int dev = dev_of_phys(b.dev_phys);
	if (dev < 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	for (unsigned k = 0; k < NBUCKETS; k++)
		for (struct alloc *a = m.bucket[k]; a; a = a->next)
			if (a->kind == K_IPC && a->ipc_pid == b.pid && a->ipc_ptr == b.ptr) {
				a->refs++;
				*pdptr = a->ptr;
				SIM_UNLOCK_RETURN(CUDA_SUCCESS);
			}
	struct alloc *a = calloc(1, sizeof(*a));
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	a->ptr = sim_addr_alloc(&g_sim.dev[dev], b.size, 512);
	if (!a->ptr) {
		free(a);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	a->size = b.size;
	a->kind = K_IPC;
	a->dev = dev;
	a->ctx = c;
	a->refs = 1;
	a->ipc_pid = b.pid;
	a->ipc_ptr = b.ptr;
	alloc_insert(a);
	*pdptr = a->ptr;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	return simi_cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult simi_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc))
		SIM_UNLOCK_RETURN(rc);
	struct alloc *a = alloc_find(dptr);
	if (!a || a->kind != K_IPC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (--a->refs == 0)
		free_alloc(a);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* ---- graphs with memory nodes ---- */

static struct graph *graph_lookup(CUgraph h)
{
	for (struct graph *g = m.graphs; g; g = g->next)
		if ((CUgraph)g == h)
			return g->alive ? g : NULL;
	return NULL;
}

static struct gexec *exec_lookup(CUgraphExec h)
{
	for (struct gexec *e = m.execs; e; e = e->next)
		if ((CUgraphExec)e == h)
			return e->alive ? e : NULL;
	return NULL;
}

CUresult simi_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	SIM_LOCK_INIT();
	if (!phGraph || flags != 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct graph *g = calloc(1, sizeof(*g));
	if (!g)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	g->alive = 1;
	g->next = m.graphs;
	m.graphs = g;
	*phGraph = (CUgraph)g;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuGraphDestroy(CUgraph hGraph)
{
	SIM_LOCK_INIT();
	struct graph *g = graph_lookup(hGraph);
	if (!g)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	g->alive = 0; /* nodes stay while an executable graph uses them */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The address is fixed now; memory is committed at upload or launch. */
CUresult simi_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies,
                                     CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	SIM_LOCK_INIT();
	struct graph *g = graph_lookup(hGraph);
	if (!g || !phGraphNode || !nodeParams || (numDependencies && !dependencies) ||
	    nodeParams->bytesize == 0 ||
	    nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    nodeParams->poolProps.location.id < 0 ||
	    nodeParams->poolProps.location.id >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (g->has_exec)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	struct gnode *n = calloc(1, sizeof(*n));
	if (!n)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	n->dev = nodeParams->poolProps.location.id;
	n->size = sim_round_up(nodeParams->bytesize, 512);
	n->dptr = sim_addr_alloc(&g_sim.dev[n->dev], n->size, 512);
	if (!n->dptr) {
		free(n);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	n->next = g->nodes;
	g->nodes = n;
	nodeParams->dptr = n->dptr;
	*phGraphNode = (CUgraphNode)n;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * Instantiation, with the lock held: validates flags as cuda.h documents them
 * (device launch cannot be combined with auto-free), and allows only one
 * executable graph at a time for a graph with memory nodes. No memory is
 * committed here: that happens at upload or launch. On error *out is left
 * untouched and nothing is created.
 */
static CUresult instantiate_locked(CUgraph hGraph, unsigned long long flags, struct gexec **out)
{
	struct graph *g = graph_lookup(hGraph);
	unsigned long long both = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
	                          CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
	if (!g || (flags & ~0xfull) || (flags & both) == both)
		return CUDA_ERROR_INVALID_VALUE;
	if (g->nodes && g->has_exec)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct gexec *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->alive = 1;
	e->graph = g;
	e->next = m.execs;
	m.execs = e;
	g->has_exec = 1;
	*out = e;
	return CUDA_SUCCESS;
}

CUresult simi_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                          unsigned long long flags)
{
	struct gexec *e;
	SIM_LOCK_INIT();
	if (!phGraphExec)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = instantiate_locked(hGraph, flags, &e);
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	SIM_UNLOCK_RETURN(rc);
}

/*
 * The CUDA 11.0 form (flags 0). On failure the error node, when asked for,
 * is set to NULL (the simulator's errors are never one node's fault), and a
 * non-empty log buffer receives a NUL-terminated reason, truncated to fit;
 * on success it receives an empty string. A log buffer of NULL with a
 * non-zero size is CUDA_ERROR_INVALID_VALUE.
 */
CUresult simi_cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
	struct gexec *e;
	SIM_LOCK_INIT();
	if (!phGraphExec || (!logBuffer && bufferSize))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = instantiate_locked(hGraph, 0, &e);
	const char *why = "";
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	else if (rc == CUDA_ERROR_NOT_SUPPORTED)
		why = "vramsim: a graph with memory nodes has one executable graph at a time";
	else
		why = "vramsim: invalid graph";
	if (rc != CUDA_SUCCESS && phErrorNode)
		*phErrorNode = NULL;
	if (bufferSize)
		snprintf(logBuffer, bufferSize, "%s", why);
	SIM_UNLOCK_RETURN(rc);
}

/* Commits a node's memory from the device's graph memory pool. */
static CUresult node_commit(struct gnode *n)
{
	struct sim_dev *d = &g_sim.dev[n->dev];
	if (d->graph_reserved - d->graph_in_use < n->size) {
		uint64_t grow =
		    sim_round_up(n->size - (d->graph_reserved - d->graph_in_use), SIM_GRANULARITY);
		if (sim_charge(d, grow) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
		d->graph_reserved += grow;
	}
	d->graph_in_use += n->size;
	n->state = 1;
	return CUDA_SUCCESS;
}

static void graph_trim(struct sim_dev *d)
{
	if (d->graph_reserved > d->graph_in_use) {
		sim_uncharge(d, d->graph_reserved - d->graph_in_use);
		d->graph_reserved = d->graph_in_use;
	}
}

/* Upload (launch 0) or launch, with the lock held and the stream checked. */
static CUresult run_locked(struct gexec *e, int launch)
{
	CUresult rc;
	for (struct gnode *n = e->graph->nodes; n; n = n->next)
		if (launch && n->state == 2)
			return CUDA_ERROR_INVALID_VALUE; /* previous allocation unfreed */
	for (struct gnode *n = e->graph->nodes; n; n = n->next) {
		if (n->state == 0 && (rc = node_commit(n)) != CUDA_SUCCESS)
			return rc;
	}
	if (!launch)
		return CUDA_SUCCESS;
	for (struct gnode *n = e->graph->nodes; n; n = n->next) {
		struct alloc *a = calloc(1, sizeof(*a));
		if (!a)
			return CUDA_ERROR_OUT_OF_MEMORY;
		a->ptr = n->dptr;
		a->size = n->size;
		a->kind = K_GRAPH;
		a->dev = n->dev;
		a->node = n;
		alloc_insert(a);
		n->state = 2;
	}
	return CUDA_SUCCESS;
}

static CUresult graph_run(CUgraphExec hGraphExec, CUstream hStream, int launch)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct gexec *e = exec_lookup(hGraphExec);
	if (!e)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	SIM_UNLOCK_RETURN(run_locked(e, launch));
}

CUresult simi_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 0);
}

CUresult simi_cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 0);
}

CUresult simi_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 1);
}

CUresult simi_cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 1);
}

/* Memory committed but not handed to the program goes back; allocations the
 * program owns stay until it frees them. The graph pool is then trimmed. */
static void exec_destroy_locked(struct gexec *e)
{
	e->alive = 0;
	e->graph->has_exec = 0;
	for (struct gnode *n = e->graph->nodes; n; n = n->next) {
		if (n->state == 1) {
			g_sim.dev[n->dev].graph_in_use -= n->size;
			n->state = 0;
		}
	}
	for (int i = 0; i < g_sim.ndev; i++)
		graph_trim(&g_sim.dev[i]);
}

CUresult simi_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	SIM_LOCK_INIT();
	struct gexec *e = exec_lookup(hGraphExec);
	if (!e)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	exec_destroy_locked(e);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * CUDA 12.0: flags from the parameter block; with
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the new executable graph is uploaded
 * into hUploadStream (checked first, so a bad stream creates nothing). If
 * the upload does not fit, the executable graph is destroyed again and the
 * upload's error returned. result_out says SUCCESS or ERROR (the simulator's
 * failures are never a node's: hErrNode_out is always NULL).
 */
CUresult simi_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS *p = instantiateParams;
	CUresult rc = CUDA_SUCCESS;
	struct gexec *e = NULL;
	SIM_LOCK_INIT();
	if (!p)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int upload = (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0;
	if (!phGraphExec)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!upload || sim_stream_ctx(p->hUploadStream, &rc))
		rc = instantiate_locked(hGraph, p->flags, &e);
	if (rc == CUDA_SUCCESS && upload && (rc = run_locked(e, 0)) != CUDA_SUCCESS)
		exec_destroy_locked(e);
	else if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	p->hErrNode_out = NULL;
	p->result_out =
	    rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return simi_cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

CUresult simi_cuDeviceGraphMemTrim(CUdevice device)
{
	SIM_LOCK_INIT();
	if (device < 0 || device >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	graph_trim(&g_sim.dev[device]);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}
