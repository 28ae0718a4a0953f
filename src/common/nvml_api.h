/*
 * nvml_api.h - the subset of NVML (nvml.h) that vramctl and its simulated
 * NVML use, declared here so the project builds without NVIDIA headers.
 * Values, struct layouts and exported names follow nvml.h of CUDA 12/13.
 *
 * Consumers dlopen("libnvidia-ml.so.1") and resolve the names below; a
 * symbol may be missing in older drivers (e.g. ..._v3), so look each up and
 * fall back.
 */
#ifndef VRAMCTL_NVML_API_H
#define VRAMCTL_NVML_API_H

#include <limits.h>

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_BUFFER_SIZE           64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_BUFFER_SIZE           80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80

#define NVML_INIT_FLAG_NO_GPUS   1
#define NVML_INIT_FLAG_NO_ATTACH 2

/* usedGpuMemory when the driver cannot tell (e.g. Windows WDDM, some containers). */
#define NVML_VALUE_NOT_AVAILABLE (ULLONG_MAX)

#define NVML_CUDA_DRIVER_VERSION_MAJOR(v) ((v) / 1000)
#define NVML_CUDA_DRIVER_VERSION_MINOR(v) (((v) % 1000) / 10)

/* Versioned structs carry sizeof | version << 24 in their first field. */
#define NVML_STRUCT_VERSION(data, ver)                                                             \
	(unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used; /* total - free */
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
	unsigned int version; /* nvmlMemory_v2 */
	unsigned long long total;
	unsigned long long reserved; /* taken by the driver and firmware */
	unsigned long long free;
	unsigned long long used; /* total - reserved - free */
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

/* nvmlDeviceGetComputeRunningProcesses (the unversioned, v1 entry point). */
typedef struct nvmlProcessInfo_v1_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* _v2 and _v3 take this layout (nvml.h names the _v3 one nvmlProcessInfo_t). */
typedef struct nvmlProcessInfo_v2_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;     /* 0xFFFFFFFF when not MIG */
	unsigned int computeInstanceId; /* 0xFFFFFFFF when not MIG */
} nvmlProcessInfo_v2_t;
typedef nvmlProcessInfo_v2_t nvmlProcessInfo_t;

/* nvmlComputeMode_t: the same numbers as CUDA's CU_COMPUTEMODE_*. */
enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1, /* deprecated */
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
/* nvmlEnableState_t (persistence mode), and MIG's current/pending modes. */
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

/*
 * Per-cgroup memory limits (R615 drivers, CUDA 13.4: "MPS v3 memory
 * partitioning"). Layouts as NVML's reference gives them
 * (docs.nvidia.com/deploy/nvml-api, structnvmlSetMemoryLimits__v1__t and
 * structnvmlGetMemoryLimits__v1__t): no version word; nameSpace is the
 * cgroup v2 directory's full path ("/sys/fs/cgroup/a/b", as NVIDIA's
 * container toolkit builds it); limits in bytes. Setting needs root; MIG
 * device handles are refused. Not verified against nvml.h itself: the value
 * of NVML_DEVICE_MEMORY_LIMIT_MAX ("no hard limit") was not found in what we
 * could read; UINT64_MAX is what a third party's reading of the 13.4 header
 * reports. Soft 0 with hard NVML_DEVICE_MEMORY_LIMIT_MAX clears a cgroup's
 * limits (and reads back when none is set).
 */
#define NVML_DEVICE_MEMORY_LIMIT_MAX (ULLONG_MAX)
typedef struct {
	const char *nameSpace;        /* in: "/sys/fs/cgroup/<path>" */
	unsigned long long softLimit; /* in: guaranteed before allocations may fail */
	unsigned long long hardLimit; /* in: the most the cgroup may allocate */
} nvmlSetMemoryLimits_v1_t;
typedef struct {
	const char *nameSpace;          /* in */
	unsigned long long softLimit;   /* out */
	unsigned long long hardLimit;   /* out */
	unsigned long long currentUsed; /* out: the cgroup's use of the device */
} nvmlGetMemoryLimits_v1_t;

/*
 * The NVML entry points used, as NVML exports them: X(name, params, args).
 * All return nvmlReturn_t; nvmlErrorString (returns const char *) is
 * declared apart.
 */
#define VR_NVML_FUNCS(X)                                                                           \
	X(nvmlInit, (void), ())                                                                    \
	X(nvmlInit_v2, (void), ())                                                                 \
	X(nvmlInitWithFlags, (unsigned int flags), (flags))                                        \
	X(nvmlShutdown, (void), ())                                                                \
	X(nvmlSystemGetDriverVersion, (char *version, unsigned int length), (version, length))     \
	X(nvmlSystemGetNVMLVersion, (char *version, unsigned int length), (version, length))       \
	X(nvmlSystemGetCudaDriverVersion, (int *cudaDriverVersion), (cudaDriverVersion))           \
	X(nvmlSystemGetCudaDriverVersion_v2, (int *cudaDriverVersion), (cudaDriverVersion))        \
	X(nvmlDeviceGetCount, (unsigned int *deviceCount), (deviceCount))                          \
	X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount), (deviceCount))                       \
	X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device), (index, device)) \
	X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device),               \
	  (index, device))                                                                         \
	X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device), (uuid, device))     \
	X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length),               \
	  (device, name, length))                                                                  \
	X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length),               \
	  (device, uuid, length))                                                                  \
	X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int *index), (device, index))         \
	X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory), (device, memory)) \
	X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory),             \
	  (device, memory))                                                                        \
	X(nvmlDeviceGetComputeRunningProcesses,                                                    \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos),             \
	  (device, infoCount, infos))                                                              \
	X(nvmlDeviceGetComputeRunningProcesses_v2,                                                 \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos),             \
	  (device, infoCount, infos))                                                              \
	X(nvmlDeviceGetComputeRunningProcesses_v3,                                                 \
	  (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos),                \
	  (device, infoCount, infos))                                                              \
	X(nvmlDeviceGetComputeMode, (nvmlDevice_t device, int *mode), (device, mode))              \
	X(nvmlDeviceGetPersistenceMode, (nvmlDevice_t device, int *mode), (device, mode))          \
	X(nvmlDeviceGetMigMode,                                                                    \
	  (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode),             \
	  (device, currentMode, pendingMode))                                                      \
	X(nvmlDeviceSetMemoryLimits_v1, (nvmlDevice_t device, nvmlSetMemoryLimits_v1_t * limits),  \
	  (device, limits))                                                                        \
	X(nvmlDeviceGetMemoryLimits_v1, (nvmlDevice_t device, nvmlGetMemoryLimits_v1_t * limits),  \
	  (device, limits))

#define VR_NVML_PFN(name, params, args) typedef nvmlReturn_t(*vr_pfn_##name) params;
VR_NVML_FUNCS(VR_NVML_PFN)
#undef VR_NVML_PFN
typedef const char *(*vr_pfn_nvmlErrorString)(nvmlReturn_t result);

#ifdef VR_NVML_PROTOTYPES
#define VR_NVML_DECL(name, params, args) nvmlReturn_t name params;
VR_NVML_FUNCS(VR_NVML_DECL)
#undef VR_NVML_DECL
const char *nvmlErrorString(nvmlReturn_t result);
#endif

#endif /* VRAMCTL_NVML_API_H */
