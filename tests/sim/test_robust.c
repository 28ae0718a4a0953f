/*
 * test_robust.c - NULL pointers, garbage handles and stale handles give the
 * driver's error codes, never a crash (vramctl's own fault tests lean on
 * the simulator failing cleanly).
 */
#include "simtest.h"

#include <fcntl.h>

int main(void)
{
	REQUIRE_SIM();
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetName(NULL, 10, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetUuid_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceTotalMem_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetAttribute(NULL, 1, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDevicePrimaryCtxRetain(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDevicePrimaryCtxGetState(0, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCtxCreate_v2(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCtxCreate_v3(NULL, NULL, 1, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUcontext c;
	ASSERT_CU(cuCtxCreate_v2(&c, 3, 0), CUDA_ERROR_INVALID_VALUE);     /* two sched modes */
	ASSERT_CU(cuCtxCreate_v2(&c, 0x100, 0), CUDA_ERROR_INVALID_VALUE); /* unknown bit */
	ASSERT_CU(cuDevicePrimaryCtxSetFlags_v2(0, 6), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCtxCreate_v2(&c, 0x84, 0), CUDA_SUCCESS); /* blocking sync | sync memops */
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	ASSERT_CU(cuCtxGetCurrent(NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCtxSetCurrent((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxPushCurrent_v2((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxDestroy_v2(NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuCtxDestroy_v2((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuGetErrorName(0, NULL), CUDA_ERROR_INVALID_VALUE);

	sim_setup();
	CUdeviceptr p;
	size_t s;
	void *h;
	ASSERT_CU(cuMemGetInfo_v2(NULL, &s), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocPitch_v2(&p, NULL, 10, 10, 4), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocManaged(&p, 10, 7), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocHost_v2(NULL, 10), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemHostAlloc(&h, 10, 0x100), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeHost(NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeHost((void *)0x1000), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemHostRegister_v2(NULL, 10, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemHostUnregister(NULL), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	ASSERT_CU(cuMemHostGetDevicePointer_v2(NULL, &s, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemGetAddressRange_v2(NULL, NULL, 0x1234), CUDA_ERROR_NOT_FOUND);

	/* Streams and pools. */
	ASSERT_CU(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuStreamDestroy_v2((CUstream)0x1234), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuStreamSynchronize((CUstream)0x1234), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuMemAllocAsync(&p, 10, (CUstream)0x1234), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuMemAllocAsync(NULL, 10, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeAsync(0x1234, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocFromPoolAsync(&p, 10, (CUmemoryPool)0x1234, NULL),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolCreate(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolDestroy((CUmemoryPool)0x1234), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolTrimTo((CUmemoryPool)0x1234, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolGetAttribute((CUmemoryPool)0x1234, 5, &s), CUDA_ERROR_INVALID_VALUE);
	CUmemoryPool pool;
	ASSERT_CU(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemPoolGetAttribute(pool, 5, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemPoolGetAttribute(pool, 99, &s), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetDefaultMemPool(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGetMemPool(&pool, 9), CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(cuDeviceSetMemPool(0, (CUmemoryPool)0x1234), CUDA_ERROR_INVALID_VALUE);

	/* Virtual memory. */
	CUmemGenericAllocationHandle mh;
	ASSERT_CU(cuMemGetAllocationGranularity(NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemCreate(&mh, 2 * MiB, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemRelease(0x1234), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAddressReserve(NULL, 2 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAddressFree(0x1234, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemMap(0x1234, 2 * MiB, 0, 0x1234, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemUnmap(0x1234, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemSetAccess(0x1234, 2 * MiB, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	int fd;
	ASSERT_CU(cuMemExportToShareableHandle(&fd, 0x1234, 1, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemImportFromShareableHandle(&mh, (void *)(intptr_t)-1, 1),
	          CUDA_ERROR_INVALID_VALUE);
	int devnull = open("/dev/null", O_RDONLY);
	ASSERT(devnull >= 0);
	ASSERT_CU(cuMemImportFromShareableHandle(&mh, (void *)(intptr_t)devnull, 1),
	          CUDA_ERROR_INVALID_VALUE);
	int pfd[2];
	ASSERT_EQ(pipe(pfd), 0);
	ASSERT_CU(cuMemImportFromShareableHandle(&mh, (void *)(intptr_t)pfd[0], 1),
	          CUDA_ERROR_INVALID_VALUE); /* a pipe: never blocks */

	/* Arrays, IPC, graphs. */
	CUarray a;
	CUDA_ARRAY_MEMORY_REQUIREMENTS req;
	ASSERT_CU(cuArrayCreate_v2(&a, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuArrayDestroy((CUarray)0x1234), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuArrayGetMemoryRequirements(NULL, (CUarray)0x1234, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMipmappedArrayDestroy((CUmipmappedArray)0x1234), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuArrayGetMemoryRequirements(&req, (CUarray)0x1234, 0),
	          CUDA_ERROR_INVALID_HANDLE);
	CUipcMemHandle ipc = {{0}};
	ASSERT_CU(cuIpcGetMemHandle(&ipc, 0x1234), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuIpcOpenMemHandle_v2(&p, ipc, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuIpcCloseMemHandle(0x1234), CUDA_ERROR_INVALID_VALUE);
	CUgraph g;
	CUgraphExec e;
	CUgraphNode n;
	ASSERT_CU(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphDestroy((CUgraph)0x1234), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, (CUgraph)0x1234, NULL, 0, NULL),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphInstantiateWithFlags(NULL, g, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, (CUgraph)0x1234, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphLaunch((CUgraphExec)0x1234, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphUpload((CUgraphExec)0x1234, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphExecDestroy((CUgraphExec)0x1234), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuDeviceGraphMemTrim(5), CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
	/* Nothing was charged by any of it. */
	ASSERT_UEQ(sim_used(), 64 * MiB);

	/* NVML. */
	nvmlDevice_t d;
	unsigned int cnt;
	ASSERT_CU(nvmlInitWithFlags(0x100), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetHandleByUUID(NULL, &d), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetName((nvmlDevice_t)0x1234, NULL, 0), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetMemoryInfo((nvmlDevice_t)0x1234, NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetName(d, NULL, 64), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetIndex(d, NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlSystemGetDriverVersion(NULL, 80), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlSystemGetCudaDriverVersion(NULL), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses(d, NULL, NULL), NVML_ERROR_INVALID_ARGUMENT);
	cnt = 0;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v2(d, &cnt, NULL),
	          NVML_ERROR_INSUFFICIENT_SIZE);
	ASSERT_EQ(cnt, 1);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(d, NULL), NVML_ERROR_UNINITIALIZED);
	return 0;
}
