/*
 * nvml.c - the simulated NVML (libnvidia-ml.so.1). It numbers devices
 * physically (CUDA_VISIBLE_DEVICES does not apply, as with the real NVML)
 * and reads the same card state files as the simulated driver, so memory
 * info and the running-process lists show every live process's usage: its
 * whole footprint on the card (contexts, their limits, modules, what the
 * driver took unasked, allocations), as the driver charged it. With
 * VRAMSIM_NVML_LAG_MS, as it was that long ago, as a real NVML's figures
 * trail the driver's.
 *
 * Linked twice: normally, and with a version script that leaves out
 * nvmlDeviceGetComputeRunningProcesses_v3, as older drivers ship it.
 *
 * Every exported function is generated from VR_NVML_FUNCS: it runs the test
 * controls (VRAMSIM_FAULT, VRAMSIM_SLOW, VRAMSIM_STOP with nvml* names), then
 * calls simn_<name>.
 */
#define VR_NVML_PROTOTYPES
#include "common/nvml_api.h"
#include "common/compiler.h"
#include "sim.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define SIMN_DECL(name, params, args) static nvmlReturn_t simn_##name params;
VR_NVML_FUNCS(SIMN_DECL)
#undef SIMN_DECL

struct nvmlDevice_st {
	unsigned int index;
	struct sim_card card;
	int open;
};

static struct {
	pthread_mutex_t mu;
	int refs;
	unsigned int ndev;
	struct nvmlDevice_st dev[SIM_MAX_DEVICES];
} g_nvml = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* A child of fork may inherit a mutex another thread held: start it fresh. */
static void nvml_atfork_child(void)
{
	pthread_mutex_init(&g_nvml.mu, NULL);
	for (unsigned i = 0; i < SIM_MAX_DEVICES; i++)
		pthread_mutex_init(&g_nvml.dev[i].card.mu, NULL);
}

static void nvml_register_atfork(void)
{
	pthread_atfork(NULL, NULL, nvml_atfork_child);
}

static nvmlReturn_t nvml_init(unsigned int flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, nvml_register_atfork);
	const struct sim_config *cfg = sim_config();
	nvmlReturn_t rc = NVML_SUCCESS;
	if (flags & ~(unsigned)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
		return NVML_ERROR_INVALID_ARGUMENT;
	/* A kernel module that differs from the libraries: NVML refuses, as
	 * nvidia-smi's "Driver/library version mismatch" shows. */
	if (sim_release_mismatch())
		return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
	pthread_mutex_lock(&g_nvml.mu);
	if (g_nvml.refs == 0) {
		g_nvml.ndev = (unsigned)cfg->ndev;
		for (unsigned i = 0; i < g_nvml.ndev; i++) {
			struct nvmlDevice_st *d = &g_nvml.dev[i];
			d->index = i;
			pthread_mutex_init(&d->card.mu, NULL);
			if (sim_card_open(&d->card, (int)i) != 0) {
				for (unsigned k = 0; k < i; k++)
					sim_card_close(&g_nvml.dev[k].card);
				rc = NVML_ERROR_DRIVER_NOT_LOADED;
				break;
			}
			d->open = 1;
		}
	}
	if (rc == NVML_SUCCESS)
		g_nvml.refs++;
	pthread_mutex_unlock(&g_nvml.mu);
	return rc;
}

static nvmlReturn_t simn_nvmlInit_v2(void)
{
	return nvml_init(0);
}

static nvmlReturn_t simn_nvmlInit(void)
{
	return nvml_init(0);
}

static nvmlReturn_t simn_nvmlInitWithFlags(unsigned int flags)
{
	return nvml_init(flags);
}

static nvmlReturn_t simn_nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;
	pthread_mutex_lock(&g_nvml.mu);
	if (g_nvml.refs == 0) {
		rc = NVML_ERROR_UNINITIALIZED;
	} else if (--g_nvml.refs == 0) {
		for (unsigned i = 0; i < g_nvml.ndev; i++) {
			if (g_nvml.dev[i].open)
				sim_card_close(&g_nvml.dev[i].card);
			g_nvml.dev[i].open = 0;
		}
		g_nvml.ndev = 0;
	}
	pthread_mutex_unlock(&g_nvml.mu);
	return rc;
}

static int initialized(void)
{
	pthread_mutex_lock(&g_nvml.mu);
	int r = g_nvml.refs > 0;
	pthread_mutex_unlock(&g_nvml.mu);
	return r;
}

/* A handle is valid if it points at one of our devices and NVML is up. */
static nvmlReturn_t check_dev(nvmlDevice_t d)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	for (unsigned i = 0; i < g_nvml.ndev; i++)
		if (d == &g_nvml.dev[i])
			return NVML_SUCCESS;
	return NVML_ERROR_INVALID_ARGUMENT;
}

VR_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED:
		return "Already Initialized";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER:
		return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT:
		return "Timeout";
	case NVML_ERROR_IRQ_ISSUE:
		return "Interrupt Request Issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND:
		return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM:
		return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED:
		return "GPU requires restart";
	case NVML_ERROR_OPERATING_SYSTEM:
		return "The operating system has blocked the request.";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "RM has detected an NVML/RM version mismatch.";
	case NVML_ERROR_IN_USE:
		return "In use by another client";
	case NVML_ERROR_MEMORY:
		return "Insufficient Memory";
	case NVML_ERROR_NO_DATA:
		return "No data";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
		return "Argument version mismatch";
	case NVML_ERROR_DEPRECATED:
		return "Deprecated";
	case NVML_ERROR_NOT_READY:
		return "Not Ready";
	case NVML_ERROR_GPU_NOT_FOUND:
		return "GPU not found";
	case NVML_ERROR_INVALID_STATE:
		return "Invalid state";
	case NVML_ERROR_UNKNOWN:
		return "Unknown Error";
	default:
		return "Unknown Error";
	}
}

static nvmlReturn_t copy_str(char *dst, unsigned int len, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	return copy_str(version, length, sim_config()->driver_release);
}

static nvmlReturn_t simn_nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	char text[48];
	snprintf(text, sizeof(text), "%d.%s", sim_config()->driver_version / 1000,
	         sim_config()->driver_release);
	return copy_str(version, length, text);
}

static nvmlReturn_t simn_nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!cudaDriverVersion)
		return NVML_ERROR_INVALID_ARGUMENT;
	*cudaDriverVersion = sim_config()->driver_version;
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	return simn_nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

static nvmlReturn_t simn_nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = g_nvml.ndev;
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return simn_nvmlDeviceGetCount_v2(deviceCount);
}

static nvmlReturn_t simn_nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= g_nvml.ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* A device that failed to initialise is counted but cannot be opened
	 * (nvidia-smi: "Unable to determine the device handle ...: Unknown Error"). */
	if (sim_config()->dev[index].broken)
		return NVML_ERROR_UNKNOWN;
	*device = &g_nvml.dev[index];
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return simn_nvmlDeviceGetHandleByIndex_v2(index, device);
}

static nvmlReturn_t simn_nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < g_nvml.ndev; i++)
		if (strcasecmp(sim_config()->dev[i].uuid_str, uuid) == 0) {
			if (sim_config()->dev[i].broken)
				return NVML_ERROR_UNKNOWN;
			*device = &g_nvml.dev[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t simn_nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	return copy_str(name, length, sim_config()->dev[device->index].name);
}

static nvmlReturn_t simn_nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	return copy_str(uuid, length, sim_config()->dev[device->index].uuid_str);
}

/* One of the device's modes (an int of struct sim_dev_cfg at field). */
static nvmlReturn_t dev_mode(nvmlDevice_t device, int *out, size_t field)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	memcpy(out, (const char *)&sim_config()->dev[device->index] + field, sizeof(*out));
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceGetComputeMode(nvmlDevice_t device, int *mode)
{
	return dev_mode(device, mode, offsetof(struct sim_dev_cfg, compute_mode));
}

static nvmlReturn_t simn_nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode)
{
	return dev_mode(device, mode, offsetof(struct sim_dev_cfg, persistence));
}

/* The simulated card is MIG-capable (an H100): disabled unless VRAMSIM_MIG. */
static nvmlReturn_t simn_nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode)
{
	int mig;
	nvmlReturn_t rc = dev_mode(device, &mig, offsetof(struct sim_dev_cfg, mig));
	if (rc != NVML_SUCCESS)
		return rc;
	if (!currentMode || !pendingMode)
		return NVML_ERROR_INVALID_ARGUMENT;
	*currentMode = *pendingMode = (unsigned)mig;
	return NVML_SUCCESS;
}

/*
 * Per-cgroup memory limits (memlimit.c): drivers before 615 answer
 * NOT_SUPPORTED (real ones lack the entry points too; callers look them up
 * and treat both alike), MIG-enabled cards NOT_SUPPORTED (NVIDIA: MIG is not
 * supported), setting NO_PERMISSION unless root (VRAMSIM_EUID).
 */
static nvmlReturn_t limits_check(nvmlDevice_t device, const void *limits)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	if (!limits)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!sim_limits_supported() || sim_config()->dev[device->index].mig)
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceSetMemoryLimits_v1(nvmlDevice_t device,
                                                      nvmlSetMemoryLimits_v1_t *limits)
{
	nvmlReturn_t rc = limits_check(device, limits);
	if (rc != NVML_SUCCESS)
		return rc;
	if (sim_config()->euid != 0)
		return NVML_ERROR_NO_PERMISSION;
	sim_card_lock(&device->card);
	rc = sim_limit_set(&device->card, limits->nameSpace, limits->softLimit, limits->hardLimit);
	sim_card_unlock(&device->card);
	return rc;
}

static nvmlReturn_t simn_nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device,
                                                      nvmlGetMemoryLimits_v1_t *limits)
{
	nvmlReturn_t rc = limits_check(device, limits);
	if (rc != NVML_SUCCESS)
		return rc;
	uint64_t soft, hard, used;
	sim_card_lock(&device->card);
	rc = sim_limit_get(&device->card, limits->nameSpace, &soft, &hard, &used);
	sim_card_unlock(&device->card);
	if (rc == NVML_SUCCESS) {
		limits->softLimit = soft;
		limits->hardLimit = hard;
		limits->currentUsed = used;
	}
	return rc;
}

static nvmlReturn_t simn_nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = device->index;
	return NVML_SUCCESS;
}

/* The card's use as NVML reports it: every process present, each as it was
 * VRAMSIM_NVML_LAG_MS ago. */
static void card_usage(nvmlDevice_t d, unsigned long long *total, unsigned long long *used)
{
	uint32_t lag = sim_config()->nvml_lag_ms;
	sim_card_lock(&d->card);
	*total = d->card.file->total;
	*used = sim_card_used(&d->card, 0);
	if (lag) {
		*used = 0;
		for (int i = 0; i < SIM_MAX_SLOTS; i++)
			if (sim_card_slot_present(&d->card, i))
				*used += sim_card_slot_used_at(&d->card, i, lag);
	}
	sim_card_unlock(&d->card);
	if (*used > *total)
		*used = *total;
}

/*
 * A card's memory as NVML counts it: the memory the driver reserves for
 * itself, which the driver's own total (cuDeviceTotalMem) leaves out, is in
 * NVML's total and, in v1, its used; free is the driver's. An H200 with
 * driver 580 reserves 615 MiB of 140 GiB (docs/real-gpu.md); the simulated
 * card a 256th, in whole 2 MiB pages.
 */
static nvmlReturn_t mem_info(nvmlDevice_t device, void *out, unsigned long long *total,
                             unsigned long long *used, unsigned long long *reserved)
{
	nvmlReturn_t rc = check_dev(device);
	if (rc != NVML_SUCCESS)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	card_usage(device, total, used);
	*reserved = *total / 256 / (2ull << 20) * (2ull << 20);
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	unsigned long long total, used, reserved;
	nvmlReturn_t rc = mem_info(device, memory, &total, &used, &reserved);
	if (rc != NVML_SUCCESS)
		return rc;
	memory->total = total + reserved;
	memory->used = used + reserved;
	memory->free = total - used;
	return NVML_SUCCESS;
}

/* The v1 form's checks, then the version check; nothing is written on any
 * error. v2 says apart what the driver reserves. */
static nvmlReturn_t simn_nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	unsigned long long total, used, reserved;
	nvmlReturn_t rc = mem_info(device, memory, &total, &used, &reserved);
	if (rc != NVML_SUCCESS)
		return rc;
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory->total = total + reserved;
	memory->reserved = reserved;
	memory->used = used;
	memory->free = total - used;
	/* Inside a cgroup with a driver limit (R615), v2 reports the limit:
	 * its total, what the cgroup holds, the room left (no reserve). */
	char cg[SIM_CGROUP_LEN];
	uint64_t limit, room;
	sim_cgroup_self(cg, sizeof(cg));
	sim_card_lock(&device->card);
	sim_limit_room(&device->card, cg, &limit, &room);
	sim_card_unlock(&device->card);
	if (limit != UINT64_MAX) {
		memory->total = limit;
		memory->reserved = 0;
		memory->free = room < memory->free ? room : memory->free;
		memory->used = limit - memory->free;
	} else if (room < memory->free) { /* a parent's limit: the card's total */
		memory->free = room;
		memory->used = total - room;
	}
	return NVML_SUCCESS;
}

/*
 * The running compute processes of a card, filled through a callback for
 * each struct layout. The NVML size protocol: *infoCount in is the room in
 * infos; when it is too small (or infos is NULL), *infoCount out is the
 * number needed and NVML_ERROR_INSUFFICIENT_SIZE is returned.
 */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
                              size_t stride, int with_instances)
{
	nvmlReturn_t rc = check_dev(device);
	unsigned int pids[SIM_MAX_SLOTS], n = 0;
	unsigned long long used[SIM_MAX_SLOTS];
	int unknown = sim_config()->nvml_unknown_usage;
	if (rc != NVML_SUCCESS)
		return rc;
	if (!infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	sim_card_lock(&device->card);
	for (int i = 0; i < SIM_MAX_SLOTS; i++) {
		/* A dead process is listed while the driver tears it down. */
		if (!sim_card_slot_present(&device->card, i))
			continue;
		pids[n] = (unsigned int)device->card.file->slots[i].pid;
		used[n] = sim_card_slot_used_at(&device->card, i, sim_config()->nvml_lag_ms);
		n++;
	}
	sim_card_unlock(&device->card);
	if (*infoCount < n || (n > 0 && !infos)) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++) {
		char *p = (char *)infos + i * stride;
		if (with_instances) {
			nvmlProcessInfo_v2_t *e = (nvmlProcessInfo_v2_t *)(void *)p;
			e->pid = pids[i];
			e->usedGpuMemory = unknown ? NVML_VALUE_NOT_AVAILABLE : used[i];
			e->gpuInstanceId = 0xFFFFFFFFu;
			e->computeInstanceId = 0xFFFFFFFFu;
		} else {
			nvmlProcessInfo_v1_t *e = (nvmlProcessInfo_v1_t *)(void *)p;
			e->pid = pids[i];
			e->usedGpuMemory = unknown ? NVML_VALUE_NOT_AVAILABLE : used[i];
		}
	}
	*infoCount = n;
	return NVML_SUCCESS;
}

static nvmlReturn_t simn_nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos)
{
	return processes(device, infoCount, infos, sizeof(*infos), 0);
}

static nvmlReturn_t simn_nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos)
{
	return processes(device, infoCount, infos, sizeof(*infos), 1);
}

static nvmlReturn_t simn_nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
	return processes(device, infoCount, infos, sizeof(*infos), 1);
}

/* ---- the exported entry points and their test controls ---- */

enum {
#define SIMN_ENUM(name, params, args) SIMN_FN_##name,
	VR_NVML_FUNCS(SIMN_ENUM)
#undef SIMN_ENUM
	    SIMN_FN_COUNT
};

static const char *const simn_names[SIMN_FN_COUNT] = {
#define SIMN_NAME(name, params, args) #name,
    VR_NVML_FUNCS(SIMN_NAME)
#undef SIMN_NAME
};

#define SIMN_ERRORS(X)                                                                             \
	X(NVML_SUCCESS)                                                                            \
	X(NVML_ERROR_UNINITIALIZED)                                                                \
	X(NVML_ERROR_INVALID_ARGUMENT)                                                             \
	X(NVML_ERROR_NOT_SUPPORTED)                                                                \
	X(NVML_ERROR_NO_PERMISSION)                                                                \
	X(NVML_ERROR_NOT_FOUND)                                                                    \
	X(NVML_ERROR_INSUFFICIENT_SIZE)                                                            \
	X(NVML_ERROR_DRIVER_NOT_LOADED)                                                            \
	X(NVML_ERROR_TIMEOUT)                                                                      \
	X(NVML_ERROR_LIBRARY_NOT_FOUND)                                                            \
	X(NVML_ERROR_FUNCTION_NOT_FOUND)                                                           \
	X(NVML_ERROR_GPU_IS_LOST)                                                                  \
	X(NVML_ERROR_LIB_RM_VERSION_MISMATCH)                                                      \
	X(NVML_ERROR_MEMORY)                                                                       \
	X(NVML_ERROR_NO_DATA)                                                                      \
	X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)                                                    \
	X(NVML_ERROR_INSUFFICIENT_RESOURCES)                                                       \
	X(NVML_ERROR_UNKNOWN)

static int nvml_error_by_name(const char *name, int *code)
{
#define SIMN_ERR(c)                                                                                \
	if (strcmp(name, #c) == 0) {                                                               \
		*code = c;                                                                         \
		return 0;                                                                          \
	}
	SIMN_ERRORS(SIMN_ERR)
#undef SIMN_ERR
	return -1;
}

static struct sim_rules g_rules = {.names = simn_names,
                                   .code_by_name = nvml_error_by_name,
                                   .count = SIMN_FN_COUNT,
                                   .prefix = "nvml",
                                   .other_prefix = "cu",
                                   .mu = PTHREAD_MUTEX_INITIALIZER};

#define SIMN_DEFINE(name, params, args)                                                            \
	VR_EXPORT nvmlReturn_t name params                                                         \
	{                                                                                          \
		int fault_rc;                                                                      \
		if (VR_UNLIKELY(sim_rules_pre(&g_rules, SIMN_FN_##name, &fault_rc)))               \
			return fault_rc;                                                           \
		return simn_##name args;                                                           \
	}
VR_NVML_FUNCS(SIMN_DEFINE)
#undef SIMN_DEFINE
