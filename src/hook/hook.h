/*
 * hook.h - the core of the injected library (libvramctl.so) that every other
 * file of src/hook uses: the configuration (vr_g), the real entry points
 * (vr_real), the re-entry guard and the log.
 *
 * Data path, one file per step, each with its own header:
 *   ways in     exported wrappers (alloc.c, pools.c, query.c), dlsym (dlsym.c)
 *               and cuGetProcAddress (lookup.c) hand the program a wrapper;
 *   devices.h   which of the program's devices a call is about;
 *   policy.h    does it fit? reserve or deny, the cap of each device and
 *               the numbers the program is shown;
 *   books.h     where the bytes are held: the group's registry or this
 *               process's own books;
 *   ptrmap.h    what each allocation was charged, until it is freed;
 *   pools.h     stream-ordered pools, charged by what they hold;
 *   spill.h     past the cap, host memory (--spill): beside pools, above
 *               policy and books.
 * Calls only go down this list (a wrapper -> devices -> policy -> books ->
 * registry); init.c loads the driver and runs every module's fork handler.
 * Nothing here is exported except the wrappers and dlsym.
 */
#ifndef VRAMCTL_HOOK_H
#define VRAMCTL_HOOK_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>

#include "common/compiler.h"
#include "common/cuda_api.h"
#include "common/size.h"
#include "common/nvml_api.h"
#include "registry/registry.h"

/* ---- real entry points (init.c) ------------------------------------- */

/* Typed pointers to the real driver and NVML, generated from hooks.def. */
struct vr_real {
#define VR_HOOK_CU(n)   vr_pfn_##n n;
#define VR_USE_CU(n)    vr_pfn_##n n;
#define VR_HOOK_NVML(n) vr_pfn_##n n;
#define VR_USE_NVML(n)  vr_pfn_##n n;
#include "hook/hooks.def"
};
extern struct vr_real vr_real;

/* Wrapper-entry prologue: resolve the driver, then either pass straight
 * through (no cap, or vramctl's own call coming back) or fall into the
 * policy code that follows. */
#define VR_PASS(name, args)                                                                        \
	int vr_act_ = vr_enter();                                                                  \
	if (VR_UNLIKELY(vr_act_ < 0 || !vr_real.name))                                             \
		return CUDA_ERROR_NOT_INITIALIZED;                                                 \
	if (!vr_act_)                                                                              \
	return vr_real.name args

/* ---- configuration and lifecycle (init.c) ---------------------------- */

enum vr_log_level { VR_LOG_QUIET, VR_LOG_ERROR, VR_LOG_WARN, VR_LOG_INFO, VR_LOG_DEBUG };

struct vr_state {
	/* Set once by vr_config_init; read without locks afterwards. */
	atomic_int config_done;
	int active;      /* a cap is configured and this copy is the acting one */
	int passthrough; /* another copy of the library acts in this process */
	int limit_bad;   /* VRAMCTL_LIMIT was malformed: fail closed (cap 0) */
	int growth;
	int log_level;
	uint64_t spill_budget; /* VRAMCTL_SPILL: host bytes past the cap (0: no spill) */
	char spill_text[64];
	struct vr_limits limits;
	char limit_text[VR_MAX_LIMITS * 64]; /* a full spec with UUIDs fits */
	char group[72];
	char registry_dir[512];
	char driver_path[512];
	char nvml_path[512];
	char record_dir[512];  /* VRAMCTL_RECORD_DIR: the run's report/trace directory */
	char record_flags[64]; /* VRAMCTL_RECORD: report,trace,stacks */

	/* The driver: loaded at the first driver call, not in the constructor. */
	atomic_int driver_state; /* 0 none, 1 loaded, -1 failed */
	void *driver;
	atomic_int nvml_state;
	void *nvml;
};
extern struct vr_state vr_g;

/* Reads the environment once (idempotent, thread-safe, re-entrant). */
void vr_config_init(void);
/* The real dlsym on a real handle (dlreal.c; never substituted). */
void *vr_dlsym_real(void *handle, const char *name);
/* What dlsym on a handle hands the program for the driver's or NVML's
 * pointer real (lookup.c): the matching wrapper, or real itself. */
void *vr_lookup_substitute(void *real, const char *name);
/* Loads the driver and fills vr_real. Returns 0, or -1 (message once). */
int vr_driver_init(void);
/* Loads NVML (only when the program uses NVML). Returns 0 or -1. */
int vr_nvml_init(void);
/* Gives the registry its NVML probe for dead members still on a GPU
 * (teardown.c), and forgets a half-done NVML start after fork. */
void vr_teardown_setup(void);
void vr_teardown_atfork_child(void);

/* Thread-local guard: set while vramctl itself calls into the driver, so
 * that a driver calling its own exported entry points comes straight through. */
extern __thread int vr_in_hook __attribute__((tls_model("initial-exec")));

/* Runs stmt as vramctl's own work (a driver or NVML call, a look-up under a
 * lock): every wrapper reached from inside it passes straight through.
 * Nests. The one way the guard is set. */
#define VR_OWN(stmt)                                                                               \
	do {                                                                                       \
		vr_in_hook++;                                                                      \
		stmt;                                                                              \
		vr_in_hook--;                                                                      \
	} while (0)

/* Every wrapper starts with this (through VR_PASS): 1 = apply the policy, 0 = pass through.
 * Returns -1 when the driver could not be loaded. */
static inline int vr_enter(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_g.driver_state, memory_order_acquire) != 1)) {
		if (vr_driver_init() != 0)
			return -1;
	}
	return vr_g.active && !vr_in_hook;
}

/* ---- logging (log.c) ------------------------------------------------- */

void vr_log_(int level, const char *fmt, ...) VR_PRINTF(2, 3);
/* The level is checked before anything is formatted. */
#define vr_log(level, ...)                                                                         \
	do {                                                                                       \
		if (VR_UNLIKELY((level) <= vr_g.log_level))                                        \
			vr_log_(level, __VA_ARGS__);                                               \
	} while (0)
/* The denial line, rate limited to a few a second plus a count of the rest. */
void vr_log_denied(int ordinal, uint64_t bytes, uint64_t cap, uint64_t in_use);
/* The same, with why spill could not serve it either ("; spill: ..."). */
void vr_log_denied_why(int ordinal, uint64_t bytes, uint64_t cap, uint64_t in_use, const char *why);
/* Rate limit of the denial line (composed by the policy): returns 1 when a
 * line may be printed now, with " (N more denials not shown)" in more when
 * some were held back; 0 when this one is held back and counted. */
int vr_log_denial_gate(char *more, size_t len);

#endif /* VRAMCTL_HOOK_H */
