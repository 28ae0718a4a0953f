/*
 * real.h - the real driver and NVML (real.c): loaded at the first driver
 * call that reaches a wrapper, never in the constructor (every process under
 * `vramctl run`, shells included, loads this library, and most never touch
 * a GPU); and the re-entry guard that every wrapper tests.
 */
#ifndef VRAMCTL_HOOK_REAL_H
#define VRAMCTL_HOOK_REAL_H

#include <stdatomic.h>

#include "common/compiler.h"
#include "common/cuda_api.h"
#include "common/nvml_api.h"
#include "hook/config.h"

/* Typed pointers to the real driver and NVML, generated from hooks.def. */
struct vr_real {
#define VR_HOOK_CU(n)   vr_pfn_##n n;
#define VR_USE_CU(n)    vr_pfn_##n n;
#define VR_HOOK_NVML(n) vr_pfn_##n n;
#define VR_USE_NVML(n)  vr_pfn_##n n;
#include "hook/hooks.def"
};
extern struct vr_real vr_real;

/* Loads the driver and fills vr_real. Returns 0, or -1 (message once). */
int vr_driver_init(void);
/* Loads NVML (only when the program uses NVML). Returns 0 or -1. */
int vr_nvml_init(void);

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

/* vr_g.driver_state while the gate of a process that may be parked is shut
 * (gate.h): the driver is loaded, and every wrapper takes vr_enter's slow
 * path, which asks vr_gate_pass (set by park.c): 0 the call goes on, else
 * the CUresult it returns. */
#define VR_DRIVER_GATED 2
extern int (*vr_gate_pass)(void);

/* The slow path of vr_enter: the driver not loaded yet, or the gate of a
 * process that may be parked shut (gate.h): 0 go on, -1 the call fails:
 * the driver could not be loaded, or the process stays parked (then
 * vr__refusal says CUDA_ERROR_OUT_OF_MEMORY: said). */
int vr__enter_slow(void);

/* What a call vr_enter refused (or one the driver lacks) returns:
 * CUDA_ERROR_OUT_OF_MEMORY once after a process stayed parked, else
 * CUDA_ERROR_NOT_INITIALIZED. Out of line, so that the wrappers' own path
 * is as it was without parking. */
CUresult vr__refusal(void) __attribute__((cold));

/* Every wrapper starts with this (through VR_PASS): 1 = apply the policy, 0 = pass through.
 * Returns -1 when the call must fail (vr__refusal says with what). */
static inline int vr_enter(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_g.driver_state, memory_order_acquire) != 1)) {
		if (vr__enter_slow() != 0)
			return -1;
	}
	return vr_g.active && !vr_in_hook;
}

/* Wrapper-entry prologue: resolve the driver, then either pass straight
 * through (no cap, or vramctl's own call coming back) or fall into the
 * policy code that follows. */
#define VR_PASS(name, args)                                                                        \
	int vr__act = vr_enter();                                                                  \
	if (VR_UNLIKELY(vr__act < 0 || !vr_real.name))                                             \
		return vr__refusal();                                                              \
	if (!vr__act)                                                                              \
	return vr_real.name args

#endif /* VRAMCTL_HOOK_REAL_H */
