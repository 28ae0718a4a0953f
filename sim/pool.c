/*
 * pool.c - stream-ordered allocation (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync) and memory pools (cuMemPool*, the device's
 * default and current pool). A pool reserves whole 2 MiB granules on the
 * card and keeps freed memory until a synchronisation trims it to the
 * release threshold (sync.c) or cuMemPoolTrimTo. Freed by free.c.
 */
#include "driver.h"

#include <stdlib.h>

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

static struct sim_pool *g_pools;

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
	p->next = g_pools;
	g_pools = p;
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
	for (struct sim_pool *p = g_pools; p; p = p->next)
		if ((CUmemoryPool)p == h)
			return p->alive ? p : NULL;
	return NULL;
}

void sim_pool_sync(int dev)
{
	for (struct sim_pool *p = g_pools; p; p = p->next)
		if (p->dev == dev && p->alive)
			pool_trim(p, p->threshold);
}

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
	struct sim_alloc *a;
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
	a->kind = SIM_ALLOC_ASYNC;
	a->dev = p->dev;
	a->ctx = c;
	a->pool = p;
	sim_alloc_insert(a);
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

void sim_pool_alloc_freed(struct sim_alloc *a)
{
	a->pool->used -= a->size;
	if (!a->pool->alive && a->pool->used == 0)
		pool_trim(a->pool, 0);
}

void sim_pool_after_fork(void)
{
	SIM_FREE_LIST(struct sim_pool, g_pools);
}
