/*
 * exports.c - every exported entry point of the simulated libcuda.so.1,
 * generated from VR_CUDA_FUNCS and the simulator's own
 * VRAMSIM_CUDA_EXTRA_FUNCS (cuda_extra.h): it runs the test controls for its
 * own name (rules.c: VRAMSIM_FAULT, VRAMSIM_SLOW, VRAMSIM_STOP), then calls
 * simi_<name>, defined in the file of its job (sim.h lists them). So every
 * entry point can be made to fail, slow down or stop, and none can be
 * forgotten. cuGetProcAddress hands out these same functions (procaddr.c
 * chooses which). Last, vramsim_take, a test control programs call.
 */
#include "driver.h"

#include "common/compiler.h"

#include <string.h>

enum {
#define SIM_FN_ENUM(name, params, args) SIM_FN_##name,
	VR_CUDA_FUNCS(SIM_FN_ENUM) VRAMSIM_CUDA_EXTRA_FUNCS(SIM_FN_ENUM)
#undef SIM_FN_ENUM
	    SIM_FN_COUNT
};

struct sim_fn {
	const char *name;
	void *fn;
};
static const struct sim_fn sim_fns[SIM_FN_COUNT] = {
#define SIM_FN_ENTRY(name, params, args) {#name, (void *)name},
    VR_CUDA_FUNCS(SIM_FN_ENTRY) VRAMSIM_CUDA_EXTRA_FUNCS(SIM_FN_ENTRY)
#undef SIM_FN_ENTRY
};
static const char *const sim_fn_names[SIM_FN_COUNT] = {
#define SIM_FN_NAME(name, params, args) #name,
    VR_CUDA_FUNCS(SIM_FN_NAME) VRAMSIM_CUDA_EXTRA_FUNCS(SIM_FN_NAME)
#undef SIM_FN_NAME
};
_Static_assert(SIM_FN_COUNT <= SIM_MAX_FNS, "raise SIM_MAX_FNS");

static struct sim_rules g_rules = {.names = sim_fn_names,
                                   .count = SIM_FN_COUNT,
                                   .prefix = "cu",
                                   .other_prefix = "nvml",
                                   .code_by_name = sim_error_by_name,
                                   .mu = PTHREAD_MUTEX_INITIALIZER};

static int fn_index(const char *name, size_t len)
{
	for (int i = 0; i < SIM_FN_COUNT; i++)
		if (strlen(sim_fns[i].name) == len && strncmp(sim_fns[i].name, name, len) == 0)
			return i;
	return -1;
}

/* The checkpoint API acts on other processes, and a process it locked may
 * still ask for its own state: it never waits at the gate. */
static inline int gated(int fn)
{
	return fn != SIM_FN_cuCheckpointProcessGetRestoreThreadId &&
	       fn != SIM_FN_cuCheckpointProcessGetState && fn != SIM_FN_cuCheckpointProcessLock &&
	       fn != SIM_FN_cuCheckpointProcessCheckpoint &&
	       fn != SIM_FN_cuCheckpointProcessRestore && fn != SIM_FN_cuCheckpointProcessUnlock;
}

/* The exported entry points themselves: the gate of a locked process
 * (checkpoint.c), then the test controls, then the call. */
#define SIM_DEFINE(name, params, args)                                                             \
	VR_EXPORT CUresult name params                                                             \
	{                                                                                          \
		CUresult sim_rc;                                                                   \
		if (gated(SIM_FN_##name))                                                          \
			sim_ckpt_enter();                                                          \
		if (!VR_UNLIKELY(sim_rules_pre(&g_rules, SIM_FN_##name, &sim_rc)))                 \
			sim_rc = simi_##name args;                                                 \
		if (gated(SIM_FN_##name))                                                          \
			sim_ckpt_leave();                                                          \
		return sim_rc;                                                                     \
	}
VR_CUDA_FUNCS(SIM_DEFINE)
VRAMSIM_CUDA_EXTRA_FUNCS(SIM_DEFINE)
#undef SIM_DEFINE

static void *fn_by_name(const char *name)
{
	int i = name ? fn_index(name, strlen(name)) : -1;
	return i < 0 ? NULL : sim_fns[i].fn;
}

CUresult simi_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                  CUdriverProcAddressQueryResult *symbolStatus)
{
	return sim_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus, fn_by_name);
}

CUresult simi_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return sim_proc_address(symbol, pfn, cudaVersion, flags, NULL, fn_by_name);
}

/* The test control a program calls: see cuda_extra.h. No test controls of
 * its own (it is not a driver entry point). */
VR_EXPORT CUresult vramsim_take(CUdevice dev, long long bytes)
{
	return sim_take(dev, bytes);
}
