/*
 * hook.h - internals of the injected library (libvramctl.so).
 *
 * Data path: a program reaches a wrapper (exported name, dlsym substitution
 * or cuGetProcAddress substitution, lookup.c); the wrapper checks one flag
 * (vr_g.active) and either calls the driver through vr_real or goes through
 * the policy: find the device (devices.c), reserve in the books (books.c),
 * call the driver, remember the allocation (ptrmap.c), and on free give it
 * back. Nothing here is exported except the wrappers and dlsym.
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
	struct vr_limits limits;
	char limit_text[VR_MAX_LIMITS * 64]; /* a full spec with UUIDs fits */
	char group[72];
	char registry_dir[512];
	char driver_path[512];
	char nvml_path[512];

	/* The driver: loaded at the first driver call, not in the constructor. */
	atomic_int driver_state; /* 0 none, 1 loaded, -1 failed */
	void *driver;
	atomic_int nvml_state;
	void *nvml;
};
extern struct vr_state vr_g;

/* Reads the environment once (idempotent, thread-safe, re-entrant). */
void vr_config_init(void);
/* Loads the driver and fills vr_real. Returns 0, or -1 (message once). */
int vr_driver_init(void);
/* Loads NVML (only when the program uses NVML). Returns 0 or -1. */
int vr_nvml_init(void);

/* Thread-local guard: set while vramctl itself calls into the driver, so
 * that a driver calling its own exported entry points comes straight through. */
extern __thread int vr_in_hook __attribute__((tls_model("initial-exec")));

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

/* ---- devices and books (devices.c, books.c) -------------------------- */

struct vr_dev {
	atomic_int ready; /* 1 once filled in */
	int ordinal;      /* as the program numbers it */
	CUdevice handle;
	unsigned char uuid[16];
	char uuid_text[48];
	uint64_t phys_total;
	int capped;
	uint64_t cap;                  /* cap in force (UINT64_MAX: none) */
	int reg;                       /* registry device index, -1: per-process books */
	_Atomic uint64_t local_in_use; /* per-process books */
};

/* The device of the calling thread's current context, or NULL. */
struct vr_dev *vr_dev_current(void);
/* The device for a CUdevice handle (as returned by cuDeviceGet), or NULL. */
struct vr_dev *vr_dev_by_handle(CUdevice h);
/* The device with this "GPU-..." UUID text, or NULL. */
struct vr_dev *vr_dev_by_uuid_text(const char *uuid);
/* After fork, in the child: forget the group membership. */
void vr_devices_forget(void);

/*
 * The books: reserve before the driver is called, release when it fails or
 * the memory is freed. vr_books_reserve returns 0 or -1 (denied; the denial
 * has been reported). Uncapped devices are counted and never denied. A NULL
 * device reserves and releases nothing.
 */
int vr_books_reserve(struct vr_dev *d, uint64_t bytes);
void vr_books_release(struct vr_dev *d, uint64_t bytes);
/* Group-wide in-use of d. */
uint64_t vr_books_in_use(struct vr_dev *d);
void vr_books_pinned(int64_t delta);
/* Joins the group (once per process); called under the devices lock. */
void vr_books_join(void);
void vr_books_forget(void);
int vr_books_device(struct vr_dev *d, uint64_t cap_if_new); /* fills d->reg, d->cap */

/* ---- allocation map (ptrmap.c) --------------------------------------- */

enum vr_kind {
	VR_KIND_LINEAR = 1, /* key: device pointer */
	VR_KIND_VMM,        /* key: CUmemGenericAllocationHandle */
	VR_KIND_ARRAY,      /* key: CUarray */
	VR_KIND_MIPMAP,     /* key: CUmipmappedArray */
	VR_KIND_HOST,       /* key: host pointer (pinned) */
	VR_KIND_GRAPH,      /* key: CUgraph (bytes of its alloc nodes, not charged) */
	VR_KIND_GRAPHEXEC,  /* key: CUgraphExec (charged) */
	VR_KIND_COUNT
};

/* Records key -> (dev, bytes). Returns 0, or -1 when memory runs out
 * (the allocation then stays uncounted: it is never released twice). */
int vr_map_put(int kind, uint64_t key, int dev, uint64_t bytes);
/* Removes key and returns 1 with its dev and bytes, or 0 when unknown. */
int vr_map_take(int kind, uint64_t key, int *dev, uint64_t *bytes);
/* Adds delta to a recorded entry's bytes (graphs). Returns 1 if found. */
int vr_map_add(int kind, uint64_t key, int dev, uint64_t delta);
void vr_map_forget(void);

/* ---- pools (pools.c) ------------------------------------------------- */

void vr_pools_settle_all(void);
void vr_pools_forget(void);
extern atomic_int vr_pools_count;

struct vr_dev *vr_dev_by_ordinal(int ordinal);
/* Joins the group outside any device (pinned memory before a device). */
void vr_devices_join(void);
/* Devices enumerated so far (0 before the program's cuInit). */
int vr_dev_count(void);
/* Like vr_books_reserve, without the denial line (settling pools). */
int vr_books_try(struct vr_dev *d, uint64_t bytes);

#endif /* VRAMCTL_HOOK_H */
