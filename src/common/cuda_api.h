/*
 * cuda_api.h - the subset of the CUDA driver API (cuda.h) that vramctl and
 * its simulated driver use, declared here so that the project builds on a
 * machine that has the NVIDIA driver but not the CUDA toolkit.
 *
 * Values, struct layouts and exported symbol names follow cuda.h of CUDA 13.0.
 * Only names that this project calls, hooks or simulates belong here.
 */
#ifndef VRAMCTL_CUDA_API_H
#define VRAMCTL_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#define VR_CUDA_HEADER_VERSION 13000

typedef int CUresult;
enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_DEVICES_UNAVAILABLE = 46, /* e.g. exclusive-process mode, device busy */
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_MAP_FAILED = 205,
	CUDA_ERROR_ALREADY_MAPPED = 208,
	CUDA_ERROR_NOT_MAPPED = 211,
	CUDA_ERROR_CONTEXT_ALREADY_IN_USE = 216,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_ILLEGAL_STATE = 401,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_NOT_PERMITTED = 800,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_SYSTEM_NOT_READY = 802, /* e.g. fabric manager not running (NVSwitch) */
	CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
	CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804, /* forward-compatibility libcuda */
	CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
	CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
	CUDA_ERROR_UNKNOWN = 999,
};

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmod_st *CUmodule;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;

#define CU_STREAM_LEGACY     ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

typedef struct CUuuid_st {
	char bytes[16];
} CUuuid;

#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
	char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1

typedef int CUdevice_attribute;
enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
	CU_DEVICE_ATTRIBUTE_COMPUTE_MODE =
	    20, /* CU_COMPUTEMODE_*: 0 default, 2 prohibited, 3 exclusive process */
	CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
	CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
	CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 92,
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
	CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID = 134,
	/* cuMemCreate on host locations (CUDA 12.2+ drivers that support it). */
	CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 141,
};

/* cuPointerGetAttribute(s): the attributes this project reads or simulates. */
typedef int CUpointer_attribute;
enum {
	CU_POINTER_ATTRIBUTE_CONTEXT = 1,                     /* CUcontext */
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,                 /* unsigned int: CUmemorytype */
	CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,              /* CUdeviceptr */
	CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,                /* void * */
	CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,                  /* unsigned int (boolean) */
	CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,              /* int */
	CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10, /* int (boolean) */
	CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,           /* CUdeviceptr */
	CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,                 /* size_t */
	CU_POINTER_ATTRIBUTE_MAPPED = 13,                     /* int (boolean) */
	CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14,       /* unsigned long long */
	CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17,             /* CUmemoryPool */
};
typedef int CUmemorytype;
enum {
	CU_MEMORYTYPE_HOST = 1,
	CU_MEMORYTYPE_DEVICE = 2,
	CU_MEMORYTYPE_ARRAY = 3,
	CU_MEMORYTYPE_UNIFIED = 4
};

typedef int CUstreamCaptureStatus;
enum {
	CU_STREAM_CAPTURE_STATUS_NONE = 0,
	CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
	CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
};
typedef int CUstreamCaptureMode;
enum {
	CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
	CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
	CU_STREAM_CAPTURE_MODE_RELAXED = 2
};
typedef void (*CUhostFn)(void *userData);

typedef int CUlimit;
enum { CU_LIMIT_STACK_SIZE = 0, CU_LIMIT_PRINTF_FIFO_SIZE = 1, CU_LIMIT_MALLOC_HEAP_SIZE = 2 };

#define CU_MEMHOSTALLOC_PORTABLE      0x01
#define CU_MEMHOSTALLOC_DEVICEMAP     0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEMHOSTREGISTER_PORTABLE   0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP  0x02
#define CU_MEM_ATTACH_GLOBAL          0x1
#define CU_MEM_ATTACH_HOST            0x2

typedef int CUmemLocationType;
enum {
	CU_MEM_LOCATION_TYPE_INVALID = 0,
	CU_MEM_LOCATION_TYPE_DEVICE = 1,
	CU_MEM_LOCATION_TYPE_HOST = 2,
	CU_MEM_LOCATION_TYPE_HOST_NUMA = 3,
	CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4,
};
typedef int CUmemAllocationType;
enum {
	CU_MEM_ALLOCATION_TYPE_INVALID = 0,
	CU_MEM_ALLOCATION_TYPE_PINNED = 1,
	CU_MEM_ALLOCATION_TYPE_MANAGED = 2
};
typedef int CUmemAllocationHandleType;
enum { CU_MEM_HANDLE_TYPE_NONE = 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1 };
typedef int CUmemAccess_flags;
enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
};
typedef int CUmemAllocationGranularity_flags;
enum { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1 };

typedef struct CUmemLocation_st {
	CUmemLocationType type;
	int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
	CUmemAllocationType type;
	CUmemAllocationHandleType requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc;

typedef struct CUmemPoolProps_st {
	CUmemAllocationType allocType;
	CUmemAllocationHandleType handleTypes;
	CUmemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
} CUmemPoolProps;

typedef int CUmemPool_attribute;
enum {
	CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
	CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,    /* cuuint64_t */
	CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5, /* cuuint64_t */
	CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,    /* cuuint64_t */
	CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,     /* cuuint64_t */
	CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8,        /* cuuint64_t */
};

typedef int CUarray_format;
enum {
	CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
	CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
	CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
	CU_AD_FORMAT_SIGNED_INT8 = 0x08,
	CU_AD_FORMAT_SIGNED_INT16 = 0x09,
	CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
	CU_AD_FORMAT_HALF = 0x10,
	CU_AD_FORMAT_FLOAT = 0x20,
};

/* Bytes per channel of an array format; 0 for a format this file does not
 * name (the simulator rejects those, the library assumes the widest). */
static inline size_t vr_array_format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
	size_t Width;
	size_t Height;
	CUarray_format Format;
	unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
	size_t Width;
	size_t Height;
	size_t Depth;
	CUarray_format Format;
	unsigned int NumChannels;
	unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

typedef struct CUDA_ARRAY_MEMORY_REQUIREMENTS_st {
	size_t size;
	size_t alignment;
	unsigned int reserved[4];
} CUDA_ARRAY_MEMORY_REQUIREMENTS;

typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_st {
	CUmemPoolProps poolProps;
	const CUmemAccessDesc *accessDescs;
	size_t accessDescCount;
	size_t bytesize;
	CUdeviceptr dptr;
} CUDA_MEM_ALLOC_NODE_PARAMS;

typedef int CUgraphInstantiateResult;
enum {
	CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
	CUDA_GRAPH_INSTANTIATE_ERROR = 1,
	CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
	CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
	CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4,
	CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED = 5,
};
enum {
	CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
	CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2,
	CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH = 4,
	CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8,
};

/* cuGraphInstantiateWithParams' parameter block (CUDA 12.0). */
typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
	cuuint64_t flags;
	CUstream hUploadStream;
	CUgraphNode hErrNode_out;
	CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* cuCtxCreate_v3's execution-affinity parameter (CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0). */
typedef struct CUexecAffinityParam_st {
	int type;
	union {
		struct {
			unsigned int val;
		} smCount;
	} param;
} CUexecAffinityParam;

/* cuCtxCreate_v4's parameter block; vramctl only passes the pointer on. */
typedef struct CUctxCreateParams_st {
	void *execAffinityParams;
	int numExecAffinityParams;
	void *cigParams;
} CUctxCreateParams;

/*
 * The checkpoint API (cuda.h "CUDA Checkpointing", CUDA 12.8 and later
 * drivers, Linux): a controller process locks another process's CUDA calls,
 * moves its device memory to host memory and back, and unlocks it. The
 * states a process goes through; CHECKPOINTING and RESTORING are the
 * newer drivers' names for an operation in progress.
 */
typedef int CUprocessState;
enum {
	CU_PROCESS_STATE_RUNNING = 0,
	CU_PROCESS_STATE_LOCKED = 1,
	CU_PROCESS_STATE_CHECKPOINTED = 2,
	CU_PROCESS_STATE_FAILED = 3,
	CU_PROCESS_STATE_CHECKPOINTING = 4,
	CU_PROCESS_STATE_RESTORING = 5,
};
typedef struct CUcheckpointLockArgs_st {
	unsigned int timeoutMs; /* 0: no timeout */
	unsigned int reserved0;
	cuuint64_t reserved1[7];
} CUcheckpointLockArgs;
typedef struct CUcheckpointCheckpointArgs_st {
	cuuint64_t reserved[8];
} CUcheckpointCheckpointArgs;
typedef struct CUcheckpointGpuPair_st {
	CUuuid oldUuid;
	CUuuid newUuid;
} CUcheckpointGpuPair;
typedef struct CUcheckpointRestoreArgs_st {
	CUcheckpointGpuPair *gpuPairs;
	unsigned int gpuPairsCount;
	char reserved[52 - sizeof(CUcheckpointGpuPair *)];
	cuuint64_t reserved1;
} CUcheckpointRestoreArgs;
typedef struct CUcheckpointUnlockArgs_st {
	cuuint64_t reserved[8];
} CUcheckpointUnlockArgs;

typedef int CUdriverProcAddressQueryResult;
enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};
enum {
	CU_GET_PROC_ADDRESS_DEFAULT = 0,
	CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
	CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1,
};

/*
 * Every driver entry point this project names, as the driver exports it:
 * X(name, parameter list, argument list). The simulated driver defines them
 * all; the injected library hooks a subset (src/hook/hooks.def). Keeping the
 * signatures in one list means the two can never disagree.
 */
#define VR_CUDA_FUNCS(X)                                                                           \
	X(cuInit, (unsigned int Flags), (Flags))                                                   \
	X(cuDriverGetVersion, (int *driverVersion), (driverVersion))                               \
	X(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))                        \
	X(cuDeviceGetCount, (int *count), (count))                                                 \
	X(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev))                  \
	X(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev), (uuid, dev))                             \
	X(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev), (uuid, dev))                          \
	X(cuDeviceTotalMem, (unsigned int *bytes, CUdevice dev), (bytes, dev))                     \
	X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))                       \
	X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev),                \
	  (pi, attrib, dev))                                                                       \
	X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev))                 \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))                                     \
	X(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev))                                       \
	X(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active),            \
	  (dev, flags, active))                                                                    \
	X(cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags), (dev, flags))         \
	X(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev),                    \
	  (pctx, flags, dev))                                                                      \
	X(cuCtxCreate_v4,                                                                          \
	  (CUcontext * pctx, CUctxCreateParams * params, unsigned int flags, CUdevice dev),        \
	  (pctx, params, flags, dev))                                                              \
	X(cuCtxDestroy_v2, (CUcontext ctx), (ctx))                                                 \
	X(cuCtxSetCurrent, (CUcontext ctx), (ctx))                                                 \
	X(cuCtxGetCurrent, (CUcontext * pctx), (pctx))                                             \
	X(cuCtxGetDevice, (CUdevice * device), (device))                                           \
	X(cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))                                             \
	X(cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))                                          \
	X(cuCtxSynchronize, (void), ())                                                            \
	X(cuCtxSetLimit, (CUlimit limit, size_t value), (limit, value))                            \
	X(cuCtxGetLimit, (size_t * pvalue, CUlimit limit), (pvalue, limit))                        \
	X(cuMemGetInfo, (unsigned int *free, unsigned int *total), (free, total))                  \
	X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                         \
	X(cuMemAlloc, (unsigned int *dptr, unsigned int bytesize), (dptr, bytesize))               \
	X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                  \
	X(cuMemAllocPitch_v2,                                                                      \
	  (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                \
	   unsigned int ElementSizeBytes),                                                         \
	  (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                  \
	X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),            \
	  (dptr, bytesize, flags))                                                                 \
	X(cuMemFree, (unsigned int dptr), (dptr))                                                  \
	X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                \
	X(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t * psize, CUdeviceptr dptr),        \
	  (pbase, psize, dptr))                                                                    \
	X(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))                         \
	X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags)) \
	X(cuMemFreeHost, (void *p), (p))                                                           \
	X(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags),                    \
	  (p, bytesize, Flags))                                                                    \
	X(cuMemHostUnregister, (void *p), (p))                                                     \
	X(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),     \
	  (data, attribute, ptr))                                                                  \
	X(cuPointerGetAttributes,                                                                  \
	  (unsigned int numAttributes, CUpointer_attribute *attributes, void **data,               \
	   CUdeviceptr ptr),                                                                       \
	  (numAttributes, attributes, data, ptr))                                                  \
	X(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))  \
	X(cuStreamEndCapture, (CUstream hStream, CUgraph * phGraph), (hStream, phGraph))           \
	X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode), (mode))                 \
	X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus),          \
	  (hStream, captureStatus))                                                                \
	X(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus * captureStatus),     \
	  (hStream, captureStatus))                                                                \
	X(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData),                       \
	  (hStream, fn, userData))                                                                 \
	X(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData),                  \
	  (hStream, fn, userData))                                                                 \
	X(cuMemHostGetDevicePointer_v2, (CUdeviceptr * pdptr, void *p, unsigned int Flags),        \
	  (pdptr, p, Flags))                                                                       \
	X(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags))            \
	X(cuStreamDestroy_v2, (CUstream hStream), (hStream))                                       \
	X(cuStreamSynchronize, (CUstream hStream), (hStream))                                      \
	X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))                                 \
	X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),                \
	  (dptr, bytesize, hStream))                                                               \
	X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),           \
	  (dptr, bytesize, hStream))                                                               \
	X(cuMemAllocFromPoolAsync,                                                                 \
	  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),              \
	  (dptr, bytesize, pool, hStream))                                                         \
	X(cuMemAllocFromPoolAsync_ptsz,                                                            \
	  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),              \
	  (dptr, bytesize, pool, hStream))                                                         \
	X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                   \
	X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))              \
	X(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps),                 \
	  (pool, poolProps))                                                                       \
	X(cuMemPoolDestroy, (CUmemoryPool pool), (pool))                                           \
	X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))     \
	X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),       \
	  (pool, attr, value))                                                                     \
	X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),       \
	  (pool, attr, value))                                                                     \
	X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev))     \
	X(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev), (pool, dev))                    \
	X(cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), (dev, pool))                      \
	X(cuMemGetAllocationGranularity,                                                           \
	  (size_t * granularity, const CUmemAllocationProp *prop,                                  \
	   CUmemAllocationGranularity_flags option),                                               \
	  (granularity, prop, option))                                                             \
	X(cuMemCreate,                                                                             \
	  (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,    \
	   unsigned long long flags),                                                              \
	  (handle, size, prop, flags))                                                             \
	X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                           \
	X(cuMemAddressReserve,                                                                     \
	  (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,                     \
	   unsigned long long flags),                                                              \
	  (ptr, size, alignment, addr, flags))                                                     \
	X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))                           \
	X(cuMemMap,                                                                                \
	  (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,       \
	   unsigned long long flags),                                                              \
	  (ptr, size, offset, handle, flags))                                                      \
	X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))                                 \
	X(cuMemSetAccess,                                                                          \
	  (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),               \
	  (ptr, size, desc, count))                                                                \
	X(cuMemExportToShareableHandle,                                                            \
	  (void *shareableHandle, CUmemGenericAllocationHandle handle,                             \
	   CUmemAllocationHandleType handleType, unsigned long long flags),                        \
	  (shareableHandle, handle, handleType, flags))                                            \
	X(cuMemImportFromShareableHandle,                                                          \
	  (CUmemGenericAllocationHandle * handle, void *osHandle,                                  \
	   CUmemAllocationHandleType shHandleType),                                                \
	  (handle, osHandle, shHandleType))                                                        \
	X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),      \
	  (pHandle, pAllocateArray))                                                               \
	X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),  \
	  (pHandle, pAllocateArray))                                                               \
	X(cuArrayDestroy, (CUarray hArray), (hArray))                                              \
	X(cuArrayGetMemoryRequirements,                                                            \
	  (CUDA_ARRAY_MEMORY_REQUIREMENTS * memoryRequirements, CUarray array, CUdevice device),   \
	  (memoryRequirements, array, device))                                                     \
	X(cuMipmappedArrayCreate,                                                                  \
	  (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pDesc,                       \
	   unsigned int numMipmapLevels),                                                          \
	  (pHandle, pDesc, numMipmapLevels))                                                       \
	X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))          \
	X(cuMipmappedArrayGetMemoryRequirements,                                                   \
	  (CUDA_ARRAY_MEMORY_REQUIREMENTS * memoryRequirements, CUmipmappedArray mipmap,           \
	   CUdevice device),                                                                       \
	  (memoryRequirements, mipmap, device))                                                    \
	X(cuIpcGetMemHandle, (CUipcMemHandle * pHandle, CUdeviceptr dptr), (pHandle, dptr))        \
	X(cuIpcOpenMemHandle_v2, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), \
	  (pdptr, handle, Flags))                                                                  \
	X(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))                                         \
	X(cuGraphCreate, (CUgraph * phGraph, unsigned int flags), (phGraph, flags))                \
	X(cuGraphDestroy, (CUgraph hGraph), (hGraph))                                              \
	X(cuGraphAddMemAllocNode,                                                                  \
	  (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,             \
	   size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams),                        \
	  (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))                        \
	X(cuGraphInstantiateWithFlags,                                                             \
	  (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),                   \
	  (phGraphExec, hGraph, flags))                                                            \
	X(cuGraphInstantiateWithParams,                                                            \
	  (CUgraphExec * phGraphExec, CUgraph hGraph,                                              \
	   CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams),                                     \
	  (phGraphExec, hGraph, instantiateParams))                                                \
	X(cuGraphInstantiateWithParams_ptsz,                                                       \
	  (CUgraphExec * phGraphExec, CUgraph hGraph,                                              \
	   CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams),                                     \
	  (phGraphExec, hGraph, instantiateParams))                                                \
	X(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))                              \
	X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))        \
	X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))   \
	X(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))        \
	X(cuDeviceGraphMemTrim, (CUdevice device), (device))                                       \
	X(cuLaunchKernel,                                                                          \
	  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
	   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
	   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),      \
	  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,       \
	   hStream, kernelParams, extra))                                                          \
	X(cuLaunchKernel_ptsz,                                                                     \
	  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,      \
	   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                 \
	   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),      \
	  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,       \
	   hStream, kernelParams, extra))                                                          \
	X(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),         \
	  (dstDevice, srcHost, ByteCount))                                                         \
	X(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),               \
	  (dstHost, srcDevice, ByteCount))                                                         \
	X(cuCheckpointProcessGetRestoreThreadId, (int pid, int *tid), (pid, tid))                  \
	X(cuCheckpointProcessGetState, (int pid, CUprocessState *state), (pid, state))             \
	X(cuCheckpointProcessLock, (int pid, CUcheckpointLockArgs *args), (pid, args))             \
	X(cuCheckpointProcessCheckpoint, (int pid, CUcheckpointCheckpointArgs *args), (pid, args)) \
	X(cuCheckpointProcessRestore, (int pid, CUcheckpointRestoreArgs *args), (pid, args))       \
	X(cuCheckpointProcessUnlock, (int pid, CUcheckpointUnlockArgs *args), (pid, args))         \
	X(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr))                      \
	X(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr))                    \
	X(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),   \
	  (symbol, pfn, cudaVersion, flags))                                                       \
	X(cuGetProcAddress_v2,                                                                     \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                      \
	   CUdriverProcAddressQueryResult *symbolStatus),                                          \
	  (symbol, pfn, cudaVersion, flags, symbolStatus))                                         \
	/* Older and newer ABI variants the driver still exports, which                            \
	 * cuGetProcAddress hands out for other cudaVersion values. */                             \
	X(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))   \
	X(cuCtxCreate_v3,                                                                          \
	  (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags, \
	   CUdevice dev),                                                                          \
	  (pctx, paramsArray, numParams, flags, dev))                                              \
	X(cuCtxDestroy, (CUcontext ctx), (ctx))                                                    \
	X(cuCtxPushCurrent, (CUcontext ctx), (ctx))                                                \
	X(cuCtxPopCurrent, (CUcontext * pctx), (pctx))                                             \
	X(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx), (device, ctx))                    \
	X(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))                                             \
	X(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev))                                        \
	X(cuDevicePrimaryCtxReset, (CUdevice dev), (dev))                                          \
	X(cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags), (dev, flags))            \
	X(cuStreamDestroy, (CUstream hStream), (hStream))                                          \
	X(cuMemAllocPitch,                                                                         \
	  (unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,                    \
	   unsigned int Height, unsigned int ElementSizeBytes),                                    \
	  (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                  \
	X(cuMemAllocHost, (void **pp, unsigned int bytesize), (pp, bytesize))                      \
	X(cuMemGetAddressRange, (unsigned int *pbase, unsigned int *psize, unsigned int dptr),     \
	  (pbase, psize, dptr))                                                                    \
	X(cuMemHostGetDevicePointer, (unsigned int *pdptr, void *p, unsigned int Flags),           \
	  (pdptr, p, Flags))                                                                       \
	X(cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags)) \
	X(cuIpcOpenMemHandle, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),    \
	  (pdptr, handle, Flags))                                                                  \
	X(cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))   \
	X(cuGraphInstantiate_v2,                                                                   \
	  (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char *logBuffer,  \
	   size_t bufferSize),                                                                     \
	  (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))

/* Function pointer types: vr_pfn_cuMemAlloc_v2 and so on. */
#define VR_CUDA_PFN(name, params, args) typedef CUresult(*vr_pfn_##name) params;
VR_CUDA_FUNCS(VR_CUDA_PFN)
#undef VR_CUDA_PFN

/*
 * Prototypes, for code that defines or links against the driver's own names
 * (the simulated driver, test programs linked with -lcuda). The injected
 * library never declares them: it calls the driver through pointers only.
 */
#ifdef VR_CUDA_PROTOTYPES
#define VR_CUDA_DECL(name, params, args) CUresult name params;
VR_CUDA_FUNCS(VR_CUDA_DECL)
#undef VR_CUDA_DECL
#endif

#endif /* VRAMCTL_CUDA_API_H */
