/*
 * test_device.c - device queries, error names and strings, kernels and
 * streams, and many threads allocating at once (run under TSan too).
 */
#include "simtest.h"

#include <pthread.h>
#include <string.h>

static void *worker(void *arg)
{
	CUcontext ctx = arg;
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	for (int i = 0; i < 200; i++) {
		CUdeviceptr p, q;
		CUstream s;
		/* Kept: the test counts them at the end. */
		ASSERT_CU(cuMemAlloc_v2(&p, 4096 + (size_t)i), CUDA_SUCCESS);
		ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
		ASSERT_CU(cuMemAllocAsync(&q, 1000, s), CUDA_SUCCESS);
		ASSERT_CU(cuMemFreeAsync(q, s), CUDA_SUCCESS);
		ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
		ASSERT_CU(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	}
	return NULL;
}

/* NVML in the same process, at the same time, on the same card. */
static void *nvml_worker(void *arg)
{
	(void)arg;
	nvmlDevice_t d;
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	for (int i = 0; i < 200; i++) {
		nvmlProcessInfo_t infos[4];
		unsigned int n = 4;
		nvmlMemory_t m;
		ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos), NVML_SUCCESS);
		ASSERT_EQ(n, 1);
		ASSERT_CU(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
		ASSERT_UGE(m.used, 64 * MiB);
	}
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return NULL;
}

int main(void)
{
	char name[128];
	CUuuid u, u2;
	int v, n;
	const char *str;

	REQUIRE_SIM();
	ASSERT_CU(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &str), CUDA_SUCCESS);
	ASSERT_STR_EQ(str, "CUDA_ERROR_OUT_OF_MEMORY");
	ASSERT_CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str), CUDA_SUCCESS);
	ASSERT_STR_EQ(str, "out of memory");
	ASSERT_CU(cuGetErrorName(CUDA_SUCCESS, &str), CUDA_SUCCESS);
	ASSERT_STR_EQ(str, "CUDA_SUCCESS");
	str = "x";
	ASSERT_CU(cuGetErrorName(12345, &str), CUDA_ERROR_INVALID_VALUE);
	ASSERT(str == NULL);
	str = "x";
	ASSERT_CU(cuGetErrorString(-1, &str), CUDA_ERROR_INVALID_VALUE);
	ASSERT(str == NULL);
	static const int codes[] = {1,   2,   3,   4,   34,  100, 101, 201, 205, 208, 211, 216,
	                            400, 401, 500, 600, 708, 712, 713, 719, 800, 801, 803, 999};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		ASSERT_CU(cuGetErrorName(codes[i], &str), CUDA_SUCCESS);
		ASSERT(strncmp(str, "CUDA_ERROR_", 11) == 0);
		ASSERT_CU(cuGetErrorString(codes[i], &str), CUDA_SUCCESS);
		ASSERT(str && *str);
	}

	ASSERT_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetCount(&n), CUDA_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_CU(cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
	ASSERT_STR_EQ(name, "NVIDIA Simulated GPU 16GB");
	ASSERT_CU(cuDeviceGetUuid(&u, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetUuid_v2(&u2, 0), CUDA_SUCCESS);
	ASSERT(memcmp(&u, &u2, sizeof(u)) == 0);
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
	          CUDA_SUCCESS);
	ASSERT_EQ(v, 9);
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0),
	          CUDA_SUCCESS);
	ASSERT_EQ(v, 0);
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0),
	          CUDA_SUCCESS);
	ASSERT_EQ(v, 1);
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
	          CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(cuDeviceGetAttribute(&v, 0, 0), CUDA_ERROR_INVALID_VALUE);

	CUcontext ctx = sim_setup();
	CUstream s;
	/* Kernels: checked, then nothing happens. */
	ASSERT_CU(cuLaunchKernel((CUfunction)0x1, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
	          CUDA_SUCCESS);
	ASSERT_CU(cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
	          CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuLaunchKernel((CUfunction)0x1, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuLaunchKernel_ptsz((CUfunction)0x1, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	ASSERT_CU(cuLaunchKernel((CUfunction)0x1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	          CUDA_SUCCESS);
	ASSERT_CU(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	ASSERT_CU(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuLaunchKernel((CUfunction)0x1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	          CUDA_ERROR_INVALID_HANDLE);
	/* Limits above their defaults take device memory. */
	size_t lim;
	unsigned long long used0 = sim_used();
	ASSERT_CU(cuCtxGetLimit(&lim, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
	ASSERT_UEQ(lim, 8 * MiB);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuCtxGetLimit(&lim, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
	ASSERT_UEQ(lim, 64 * MiB);
	ASSERT_UEQ(sim_used(), used0 + 56 * MiB);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 56 * MiB + 1024ull * 132 * 2048);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 20 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuCtxGetLimit(&lim, CU_LIMIT_MALLOC_HEAP_SIZE), CUDA_SUCCESS);
	ASSERT_UEQ(lim, 64 * MiB);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 40 * MiB), CUDA_SUCCESS);

	/* Many threads at once. */
	unsigned long long before = sim_used();
	pthread_t t[8], nt[2];
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(pthread_create(&nt[i], NULL, nvml_worker, NULL), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, worker, ctx), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(pthread_join(nt[i], NULL), 0);
	/* 1,600 blocks of 4,096-4,295 bytes (8 or 9 granules of 512 bytes)
	 * carved from the context's pages, whatever the threads' order: at
	 * most 455 in a page of 4,096 granules, at least 3 pages' worth. */
	ASSERT_UEQ(sim_used(), before + 4 * 2 * MiB);
	return 0;
}
