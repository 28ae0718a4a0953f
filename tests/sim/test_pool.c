/*
 * test_pool.c - stream-ordered allocation: the default pool keeps freed
 * memory reserved until a synchronisation trims it to the release threshold;
 * pool attributes; explicit pools; cuMemPoolTrimTo; current pool per device.
 */
#include "simtest.h"

static cuuint64_t attr(CUmemoryPool pool, CUmemPool_attribute a)
{
	cuuint64_t v = 12345;
	ASSERT_CU(cuMemPoolGetAttribute(pool, a, &v), CUDA_SUCCESS);
	return v;
}

int main(void)
{
	CUmemoryPool def, cur, pool;
	CUdeviceptr p, q;
	CUstream s;
	cuuint64_t v;

	REQUIRE_SIM();
	sim_setup();
	unsigned long long base = sim_used();
	ASSERT_CU(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	ASSERT(def == cur);
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);

	/* Allocation reserves whole 2 MiB chunks; used counts 512-byte units. */
	ASSERT_CU(cuMemAllocAsync(&p, 3 * MiB, s), CUDA_SUCCESS);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 3 * MiB);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	/* Fits in what is reserved: no new physical memory. */
	ASSERT_CU(cuMemAllocAsync_ptsz(&q, 1 * MiB, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuMemAllocAsync(&p, 0, s), CUDA_ERROR_INVALID_VALUE);

	/* Freed memory stays in the pool until a synchronisation. */
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1 * MiB);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	/* Threshold 0: trimmed down to what is in use. */
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 1 * MiB);
	ASSERT_UEQ(sim_used(), base + 1 * MiB);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 4 * MiB);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4 * MiB);
	ASSERT_CU(cuMemFreeAsync_ptsz(q, CU_STREAM_PER_THREAD), CUDA_SUCCESS);

	/* A high threshold keeps memory across synchronisations (PyTorch). */
	v = ~0ull;
	ASSERT_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 10 * MiB, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSynchronize(), CUDA_SUCCESS);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 11 * MiB);
	ASSERT_UEQ(sim_used(), base + 11 * MiB);
	/* Trim explicitly. */
	ASSERT_CU(cuMemPoolTrimTo(def, 4 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
	ASSERT_CU(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	/* High-water marks reset to the current value with 0; other values fail. */
	v = 0;
	ASSERT_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v), CUDA_SUCCESS);
	ASSERT_UEQ(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0);
	v = 5;
	ASSERT_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE); /* the default pool */

	/* Explicit pools. */
	CUmemPoolProps props = {0};
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	ASSERT_CU(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocFromPoolAsync(&p, 5 * MiB, pool, s), CUDA_SUCCESS);
	ASSERT_UEQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * MiB);
	ASSERT_UEQ(sim_used(), base + 6 * MiB);
	/* As the device's current pool, cuMemAllocAsync uses it. */
	ASSERT_CU(cuDeviceSetMemPool(0, pool), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	ASSERT(cur == pool);
	ASSERT_CU(cuMemAllocAsync(&q, 1 * MiB, s), CUDA_SUCCESS);
	ASSERT_UEQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 6 * MiB);
	ASSERT_UEQ(sim_used(), base + 6 * MiB);
	/* Destroyed with allocations outstanding: they go when freed. */
	ASSERT_CU(cuMemPoolDestroy(pool), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
	ASSERT(cur == def);
	CUdeviceptr r;
	ASSERT_CU(cuMemAllocFromPoolAsync(&r, 1, pool, s), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS); /* synchronous free of a pool allocation */
	ASSERT_UEQ(sim_used(), base + 6 * MiB);
	ASSERT_CU(cuMemFreeAsync(q, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* maxSize bounds what a pool may reserve. */
	props.maxSize = 8 * MiB;
	ASSERT_CU(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocFromPoolAsync(&p, 6 * MiB, pool, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocFromPoolAsync(&q, 3 * MiB, pool, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAllocFromPoolAsync(&q, 2 * MiB, pool, s), CUDA_SUCCESS);
	ASSERT_UEQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 8 * MiB);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeAsync(q, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemPoolDestroy(pool), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	props.maxSize = 0;

	/* Host pools are not device pools. */
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	ASSERT_CU(cuMemPoolCreate(&pool, &props), CUDA_ERROR_NOT_SUPPORTED);
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 3;
	ASSERT_CU(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_DEVICE);

	/* Out of memory: the pool gives back what it holds unused, then fails. */
	v = ~0ull;
	ASSERT_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 8 * GiB, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 12 * GiB, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&q, 8 * GiB, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	return 0;
}
