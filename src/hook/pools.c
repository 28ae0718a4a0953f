/*
 * pools.c - stream-ordered allocation (cuMemAllocAsync, ...FromPoolAsync)
 * counted by what the pools physically hold.
 *
 * A pool keeps freed memory for reuse (PyTorch's async backend sets the
 * release threshold to the maximum, so it keeps everything), so what the
 * device loses is the pool's reserved memory
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), not the sum of live allocations.
 * Each pool carries a charge in the books that follows that figure:
 *
 *   before an allocation: if the pool's slack (reserved - used) cannot
 *     hold the request, reserve the request rounded up to 2 MiB (the pool's
 *     growth granule) as "in flight"; a request that does not fit is refused
 *     with CUDA_ERROR_OUT_OF_MEMORY before the driver is called;
 *   after it, and at every point where a pool may shrink (stream, context
 *     synchronisation, cuMemPoolTrimTo, memory queries), settle: the charge
 *     becomes reserved + in flight. Growth past what was reserved (a driver
 *     growing by a larger chunk) is reserved if it fits; if it does not, it
 *     stays pending and is retried at the next settle, and the books run
 *     behind the device by at most that chunk meanwhile.
 *   cuMemFreeAsync is not hooked: a free gives nothing back until the pool
 *     shrinks, which the next settle sees.
 *   cuMemPoolDestroy gives the whole charge back.
 * Pools created on host locations are not device memory and not counted.
 */
#include <pthread.h>
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "hook/pools.h"
#include "hook/devices.h"
#include "hook/policy.h"
#include "hook/spill.h"

#define MAX_POOLS 256
#define GRANULE   (2ull * 1024 * 1024)

struct pool {
	CUmemoryPool pool;
	int dev;           /* ordinal, -1: not device memory */
	uint64_t charged;  /* bytes held in the books for this pool */
	uint64_t inflight; /* reserved for allocations under way */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool pools[MAX_POOLS];
atomic_int vr_pools_count;

static struct pool *find_locked(CUmemoryPool p)
{
	int n = atomic_load_explicit(&vr_pools_count, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		if (pools[i].pool == p)
			return &pools[i];
	return NULL;
}

static struct pool *get_locked(CUmemoryPool p, int dev)
{
	struct pool *r = find_locked(p);
	if (r)
		return r;
	int n = atomic_load_explicit(&vr_pools_count, memory_order_relaxed);
	if (n == MAX_POOLS) {
		vr_log(VR_LOG_WARN,
		       "more than %d memory pools; allocations from the others are refused "
		       "(they could not be counted)",
		       MAX_POOLS);
		return NULL;
	}
	pools[n] = (struct pool){.pool = p, .dev = dev};
	atomic_store_explicit(&vr_pools_count, n + 1, memory_order_release);
	return &pools[n];
}

/* One attribute of a pool: CUDA_SUCCESS, or the driver's error. */
static CUresult pool_attr(CUmemoryPool p, CUmemPool_attribute a, uint64_t *out)
{
	cuuint64_t v = 0;
	if (!vr_real.cuMemPoolGetAttribute)
		return CUDA_ERROR_NOT_SUPPORTED;
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemPoolGetAttribute(p, a, &v));
	if (rc == CUDA_SUCCESS)
		*out = v;
	return rc;
}

/* Under pool_lock: the charge follows reserved + in flight. */
static void settle_locked(struct pool *r)
{
	uint64_t reserved;
	if (r->dev < 0 ||
	    pool_attr(r->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
		return;
	struct vr_dev *d = vr_dev_by_ordinal(r->dev);
	if (!d)
		return;
	uint64_t target = reserved + r->inflight;
	if (target < r->charged) {
		vr_policy_release(d, r->charged - target);
		r->charged = target;
	} else if (target > r->charged && vr_policy_try(d, target - r->charged) == 0) {
		r->charged = target;
	}
}

void vr_pools_settle_all(void)
{
	pthread_mutex_lock(&pool_lock);
	int n = atomic_load_explicit(&vr_pools_count, memory_order_relaxed);
	for (int i = 0; i < n; i++)
		settle_locked(&pools[i]);
	pthread_mutex_unlock(&pool_lock);
}

typedef CUresult (*async_call)(CUdeviceptr *, size_t, CUmemoryPool, CUstream, void *);

/*
 * Every look-up this needs (the current device, the device's pool, the
 * pool's figures) must succeed: if one fails, the allocation is refused
 * with that look-up's error, before the driver is called, so nothing is
 * ever made uncounted.
 */
static CUresult async_alloc(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s,
                            async_call call, void *fn)
{
	if (!dptr || bytes == 0)
		return call(dptr, bytes, pool, s, fn);
	struct vr_dev *d;
	CUresult rc = vr_dev_for_alloc(&d);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pool) {
		if (!vr_real.cuDeviceGetMemPool)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = vr_real.cuDeviceGetMemPool(&pool, d->handle);
		if (rc != CUDA_SUCCESS) {
			vr_dev_say_failed("cuDeviceGetMemPool", rc);
			return rc;
		}
	}
	pthread_mutex_lock(&pool_lock);
	struct pool *r = get_locked(pool, d->ordinal);
	uint64_t reserved = 0, used = 0, need = 0;
	int attr_failed = 0;
	if (!r) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (r->dev >= 0) { /* not a host pool */
		rc = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
		if (rc == CUDA_SUCCESS)
			rc = pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
		attr_failed = rc != CUDA_SUCCESS;
		if (rc == CUDA_SUCCESS && !(d = vr_dev_by_ordinal(r->dev)))
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		uint64_t slack = reserved > used ? reserved - used : 0;
		if (rc == CUDA_SUCCESS && bytes > slack)
			need = (bytes + GRANULE - 1) / GRANULE * GRANULE;
		if (need && vr_policy_reserve(d, need) != 0)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		else if (need) {
			r->charged += need;
			r->inflight += need;
		}
	} else {
		r = NULL; /* host memory: not counted */
	}
	pthread_mutex_unlock(&pool_lock);
	if (attr_failed)
		vr_dev_say_failed("cuMemPoolGetAttribute", rc);
	if (rc != CUDA_SUCCESS)
		return rc;

	VR_OWN(rc = call(dptr, bytes, pool, s, fn));
	vr_gt_answered(); /* what a borrow put on the board ends */

	if (r) {
		pthread_mutex_lock(&pool_lock);
		r->inflight -= need;
		settle_locked(r);
		pthread_mutex_unlock(&pool_lock);
	}
	return rc;
}

static CUresult call_async(CUdeviceptr *p, size_t b, CUmemoryPool pool, CUstream s, void *fn)
{
	(void)pool;
	return ((vr_pfn_cuMemAllocAsync)fn)(p, b, s);
}

static CUresult call_from_pool(CUdeviceptr *p, size_t b, CUmemoryPool pool, CUstream s, void *fn)
{
	return ((vr_pfn_cuMemAllocFromPoolAsync)fn)(p, b, pool, s);
}

VR_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	VR_PASS(cuMemAllocAsync, (dptr, bytesize, hStream));
	return async_alloc(dptr, bytesize, NULL, hStream, call_async,
	                   (void *)vr_real.cuMemAllocAsync);
}

VR_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	VR_PASS(cuMemAllocAsync_ptsz, (dptr, bytesize, hStream));
	return async_alloc(dptr, bytesize, NULL, hStream, call_async,
	                   (void *)vr_real.cuMemAllocAsync_ptsz);
}

VR_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream)
{
	VR_PASS(cuMemAllocFromPoolAsync, (dptr, bytesize, pool, hStream));
	if (!pool)
		return vr_real.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
	return async_alloc(dptr, bytesize, pool, hStream, call_from_pool,
	                   (void *)vr_real.cuMemAllocFromPoolAsync);
}

VR_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream)
{
	VR_PASS(cuMemAllocFromPoolAsync_ptsz, (dptr, bytesize, pool, hStream));
	if (!pool)
		return vr_real.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream);
	return async_alloc(dptr, bytesize, pool, hStream, call_from_pool,
	                   (void *)vr_real.cuMemAllocFromPoolAsync_ptsz);
}

VR_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	VR_PASS(cuMemPoolCreate, (pool, props));
	/* The device first: a device pool is never created uncounted. */
	struct vr_dev *d = NULL;
	CUresult rc;
	if (pool && props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	    (rc = vr_dev_for_handle(props->location.id, &d)) != CUDA_SUCCESS)
		return rc;
	VR_OWN(rc = vr_real.cuMemPoolCreate(pool, props));
	if (rc != CUDA_SUCCESS || !pool || !props)
		return rc;
	int dev = d ? d->ordinal : -1;
	pthread_mutex_lock(&pool_lock);
	struct pool *r = get_locked(*pool, dev);
	if (r) /* a handle the driver reuses is a new pool */
		*r = (struct pool){.pool = *pool, .dev = dev};
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

VR_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	VR_PASS(cuMemPoolDestroy, (pool));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemPoolDestroy(pool));
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&pool_lock);
	struct pool *r = find_locked(pool);
	if (r) {
		if (r->dev >= 0 && r->charged)
			vr_policy_release(vr_dev_by_ordinal(r->dev), r->charged);
		int n = atomic_load_explicit(&vr_pools_count, memory_order_relaxed);
		*r = pools[n - 1];
		atomic_store_explicit(&vr_pools_count, n - 1, memory_order_release);
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

VR_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	VR_PASS(cuMemPoolTrimTo, (pool, minBytesToKeep));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemPoolTrimTo(pool, minBytesToKeep));
	if (rc == CUDA_SUCCESS)
		vr_pools_settle_all();
	return rc;
}

/* Synchronisation is where pools give memory back (release threshold), and
 * where spilled blocks freed in stream order are done with. */
#define VR_SYNC(name, params, args)                                                                \
	VR_EXPORT CUresult name params                                                             \
	{                                                                                          \
		VR_PASS(name, args);                                                               \
		CUresult rc;                                                                       \
		VR_OWN(rc = vr_real.name args);                                                    \
		if (atomic_load_explicit(&vr_pools_count, memory_order_relaxed))                   \
			vr_pools_settle_all();                                                     \
		vr_spill_drain();                                                                  \
		return rc;                                                                         \
	}
VR_SYNC(cuStreamSynchronize, (CUstream hStream), (hStream))
VR_SYNC(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))
VR_SYNC(cuCtxSynchronize, (void), ())

static void pools_atfork_child(void)
{
	pthread_mutex_init(&pool_lock, NULL);
	memset(pools, 0, sizeof pools);
	atomic_store(&vr_pools_count, 0);
}
VR_ATFORK_CHILD(pools_atfork_child);
