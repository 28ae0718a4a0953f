/*
 * procaddr.c - cuGetProcAddress's table: which exported variant answers a
 * (symbol, cudaVersion, flags) query. exports.c turns the name chosen into
 * the address.
 */
#include "driver.h"

#include "common/compiler.h"

#include <string.h>

/*
 * One row per exported variant: (base name, exported name, CUDA version that
 * introduced it, its per-thread-default-stream variant or NULL). Versions are
 * those of cudaTypedefs.h (PFN_<name>_v<version>).
 */
static const struct sim_proc {
	const char *base, *name;
	int version;
	const char *ptsz;
} sim_procs[] = {
    {"cuInit", "cuInit", 2000, NULL},
    {"cuDriverGetVersion", "cuDriverGetVersion", 2020, NULL},
    {"cuDeviceGet", "cuDeviceGet", 2000, NULL},
    {"cuDeviceGetCount", "cuDeviceGetCount", 2000, NULL},
    {"cuDeviceGetName", "cuDeviceGetName", 2000, NULL},
    {"cuDeviceGetUuid", "cuDeviceGetUuid", 9020, NULL},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040, NULL},
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000, NULL},
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020, NULL},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000, NULL},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, NULL},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 7000, NULL},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000, NULL},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset", 7000, NULL},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000, NULL},
    {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 7000, NULL},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags", 7000, NULL},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000, NULL},
    {"cuCtxCreate", "cuCtxCreate", 2000, NULL},
    {"cuCtxCreate", "cuCtxCreate_v2", 3020, NULL},
    {"cuCtxCreate", "cuCtxCreate_v3", 11040, NULL},
    {"cuCtxCreate", "cuCtxCreate_v4", 12050, NULL},
    {"cuCtxDestroy", "cuCtxDestroy", 2000, NULL},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000, NULL},
    {"cuCtxSetCurrent", "cuCtxSetCurrent", 4000, NULL},
    {"cuCtxGetCurrent", "cuCtxGetCurrent", 4000, NULL},
    {"cuCtxGetDevice", "cuCtxGetDevice", 2000, NULL},
    {"cuCtxGetDevice", "cuCtxGetDevice_v2", 13000, NULL},
    {"cuCtxPushCurrent", "cuCtxPushCurrent", 2000, NULL},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000, NULL},
    {"cuCtxPopCurrent", "cuCtxPopCurrent", 2000, NULL},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000, NULL},
    {"cuCtxSynchronize", "cuCtxSynchronize", 2000, NULL},
    {"cuCtxSynchronize", "cuCtxSynchronize_v2", 13000, NULL},
    {"cuCtxSetLimit", "cuCtxSetLimit", 3010, NULL},
    {"cuCtxGetLimit", "cuCtxGetLimit", 3010, NULL},
    {"cuMemGetInfo", "cuMemGetInfo", 2000, NULL},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020, NULL},
    {"cuMemAlloc", "cuMemAlloc", 2000, NULL},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020, NULL},
    {"cuMemAllocPitch", "cuMemAllocPitch", 2000, NULL},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020, NULL},
    {"cuMemAllocManaged", "cuMemAllocManaged", 6000, NULL},
    {"cuMemFree", "cuMemFree", 2000, NULL},
    {"cuMemFree", "cuMemFree_v2", 3020, NULL},
    {"cuMemGetAddressRange", "cuMemGetAddressRange", 2000, NULL},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020, NULL},
    {"cuMemAllocHost", "cuMemAllocHost", 2000, NULL},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020, NULL},
    {"cuMemHostAlloc", "cuMemHostAlloc", 2020, NULL},
    {"cuMemFreeHost", "cuMemFreeHost", 2000, NULL},
    {"cuMemHostRegister", "cuMemHostRegister", 4000, NULL},
    {"cuMemHostRegister", "cuMemHostRegister_v2", 6050, NULL},
    {"cuMemHostUnregister", "cuMemHostUnregister", 4000, NULL},
    {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer", 2020, NULL},
    {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", 3020, NULL},
    {"cuStreamCreate", "cuStreamCreate", 2000, NULL},
    {"cuStreamDestroy", "cuStreamDestroy", 2000, NULL},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000, NULL},
    {"cuStreamSynchronize", "cuStreamSynchronize", 2000, "cuStreamSynchronize_ptsz"},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010, NULL},
    {"cuStreamEndCapture", "cuStreamEndCapture", 10000, NULL},
    {"cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode", 10010, NULL},
    {"cuStreamIsCapturing", "cuStreamIsCapturing", 10000, "cuStreamIsCapturing_ptsz"},
    {"cuLaunchHostFunc", "cuLaunchHostFunc", 10000, "cuLaunchHostFunc_ptsz"},
    {"cuPointerGetAttribute", "cuPointerGetAttribute", 4000, NULL},
    {"cuPointerGetAttributes", "cuPointerGetAttributes", 7000, NULL},
    {"cuMemAllocAsync", "cuMemAllocAsync", 11020, "cuMemAllocAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemFreeAsync", "cuMemFreeAsync", 11020, "cuMemFreeAsync_ptsz"},
    {"cuMemPoolCreate", "cuMemPoolCreate", 11020, NULL},
    {"cuMemPoolDestroy", "cuMemPoolDestroy", 11020, NULL},
    {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020, NULL},
    {"cuMemPoolSetAttribute", "cuMemPoolSetAttribute", 11020, NULL},
    {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute", 11020, NULL},
    {"cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020, NULL},
    {"cuDeviceGetMemPool", "cuDeviceGetMemPool", 11020, NULL},
    {"cuDeviceSetMemPool", "cuDeviceSetMemPool", 11020, NULL},
    {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 10020, NULL},
    {"cuMemCreate", "cuMemCreate", 10020, NULL},
    {"cuMemRelease", "cuMemRelease", 10020, NULL},
    {"cuMemAddressReserve", "cuMemAddressReserve", 10020, NULL},
    {"cuMemAddressFree", "cuMemAddressFree", 10020, NULL},
    {"cuMemMap", "cuMemMap", 10020, NULL},
    {"cuMemUnmap", "cuMemUnmap", 10020, NULL},
    {"cuMemSetAccess", "cuMemSetAccess", 10020, NULL},
    {"cuMemExportToShareableHandle", "cuMemExportToShareableHandle", 10020, NULL},
    {"cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle", 10020, NULL},
    {"cuArrayCreate", "cuArrayCreate_v2", 3020, NULL},
    {"cuArray3DCreate", "cuArray3DCreate_v2", 3020, NULL},
    {"cuArrayDestroy", "cuArrayDestroy", 2000, NULL},
    {"cuArrayGetMemoryRequirements", "cuArrayGetMemoryRequirements", 11060, NULL},
    {"cuMipmappedArrayCreate", "cuMipmappedArrayCreate", 5000, NULL},
    {"cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy", 5000, NULL},
    {"cuMipmappedArrayGetMemoryRequirements", "cuMipmappedArrayGetMemoryRequirements", 11060, NULL},
    {"cuIpcGetMemHandle", "cuIpcGetMemHandle", 4010, NULL},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle", 4010, NULL},
    {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2", 11000, NULL},
    {"cuIpcCloseMemHandle", "cuIpcCloseMemHandle", 4010, NULL},
    {"cuGraphCreate", "cuGraphCreate", 10000, NULL},
    {"cuGraphDestroy", "cuGraphDestroy", 10000, NULL},
    {"cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode", 11040, NULL},
    {"cuGraphInstantiate", "cuGraphInstantiate_v2", 11000, NULL},
    {"cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040, NULL},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams", 12000,
     "cuGraphInstantiateWithParams_ptsz"},
    {"cuGraphExecDestroy", "cuGraphExecDestroy", 10000, NULL},
    {"cuGraphLaunch", "cuGraphLaunch", 10000, "cuGraphLaunch_ptsz"},
    {"cuGraphUpload", "cuGraphUpload", 11010, "cuGraphUpload_ptsz"},
    {"cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim", 11040, NULL},
    {"cuLaunchKernel", "cuLaunchKernel", 4000, "cuLaunchKernel_ptsz"},
    {"cuModuleLoad", "cuModuleLoad", 2000, NULL},
    {"cuModuleLoadData", "cuModuleLoadData", 2000, NULL},
    {"cuModuleLoadDataEx", "cuModuleLoadDataEx", 2010, NULL},
    {"cuModuleLoadFatBinary", "cuModuleLoadFatBinary", 2000, NULL},
    {"cuModuleUnload", "cuModuleUnload", 2000, NULL},
    {"cuModuleGetFunction", "cuModuleGetFunction", 2000, NULL},
    {"cuModuleGetLoadingMode", "cuModuleGetLoadingMode", 11070, NULL},
    {"cuLibraryLoadData", "cuLibraryLoadData", 12000, NULL},
    {"cuLibraryLoadFromFile", "cuLibraryLoadFromFile", 12000, NULL},
    {"cuLibraryUnload", "cuLibraryUnload", 12000, NULL},
    {"cuLibraryGetKernel", "cuLibraryGetKernel", 12000, NULL},
    {"cuKernelGetFunction", "cuKernelGetFunction", 12000, NULL},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020, NULL},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020, NULL},
    {"cuCheckpointProcessGetRestoreThreadId", "cuCheckpointProcessGetRestoreThreadId", 12080, NULL},
    {"cuCheckpointProcessGetState", "cuCheckpointProcessGetState", 12080, NULL},
    {"cuCheckpointProcessLock", "cuCheckpointProcessLock", 12080, NULL},
    {"cuCheckpointProcessCheckpoint", "cuCheckpointProcessCheckpoint", 12080, NULL},
    {"cuCheckpointProcessRestore", "cuCheckpointProcessRestore", 12080, NULL},
    {"cuCheckpointProcessUnlock", "cuCheckpointProcessUnlock", 12080, NULL},
    {"cuGetErrorName", "cuGetErrorName", 6000, NULL},
    {"cuGetErrorString", "cuGetErrorString", 6000, NULL},
    {"cuGetProcAddress", "cuGetProcAddress", 11030, NULL},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000, NULL},
};

/*
 * The rules of cuda.h: the newest variant introduced at or before
 * cudaVersion; per-thread variants only under
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (DEFAULT means legacy at the
 * driver level); CUDA_SUCCESS with *pfn = NULL for unknown symbols and for
 * symbols newer than cudaVersion (told apart by symbolStatus);
 * CUDA_ERROR_INVALID_VALUE for a cudaVersion above the driver's.
 */
CUresult sim_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status,
                          void *(*resolve)(const char *name))
{
	const struct sim_proc *best = NULL;
	int known = 0;

	if (!symbol || !pfn || (flags & ~(cuuint64_t)3))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (cudaVersion > sim_config()->driver_version)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < VR_ARRAY_LEN(sim_procs); i++) {
		const struct sim_proc *p = &sim_procs[i];
		if (strcmp(p->base, symbol) != 0)
			continue;
		known = 1;
		if (p->version <= cudaVersion && (!best || p->version > best->version))
			best = p;
	}
	if (!best) {
		if (status)
			*status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
			                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_SUCCESS;
	}
	if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz)
		*pfn = resolve(best->ptsz);
	else
		*pfn = resolve(best->name);
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}
