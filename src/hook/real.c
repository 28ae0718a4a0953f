/*
 * real.c - the real driver and NVML, each dlopen'ed once, lazily: the driver
 * at the first driver call that reaches a wrapper, NVML only when the
 * program uses NVML (or the registry's probe asks). With no VRAMCTL_LIMIT
 * the library is invisible: wrappers test one flag and call the driver.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "hook/atfork.h"
#include "hook/dlreal.h"
#include "hook/job.h"
#include "hook/log.h"
#include "hook/real.h"

struct vr_real vr_real;
int (*vr_gate_pass)(void);
__thread int vr_in_hook __attribute__((tls_model("initial-exec")));

/* Guards publishing the real pointers (never held across dlopen). */
static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int loading;

/* What differs between the driver and NVML; load() does the rest. */
struct lib {
	atomic_int *state; /* 0 none, 1 loaded, -1 failed */
	void **handle;
	void *(*open)(const char **err);             /* dlopen; *err: why not, if known */
	void (*resolve)(struct vr_real *r, void *h); /* fill r's part from h */
	void (*publish)(const struct vr_real *r);    /* copy r's part to vr_real */
	void (*failed)(const char *err);             /* the message, under a cap */
};

static void *open_driver(const char **err)
{
	void *h;
	if (vr_g.driver_path[0]) {
		h = dlopen(vr_g.driver_path, RTLD_LAZY | RTLD_LOCAL);
	} else {
		/* As the program's own dlopen would find it: LD_LIBRARY_PATH,
		 * ld.so.cache, the default directories; then WSL's driver folder. */
		h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
		if (!h)
			h = dlopen("/usr/lib/wsl/lib/libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	}
	if (!h)
		*err = dlerror();
	return h;
}

static void resolve_driver(struct vr_real *r, void *h)
{
#define VR_HOOK_CU(n) r->n = (vr_pfn_##n)vr_dlsym_real(h, #n);
#define VR_USE_CU(n)  VR_HOOK_CU(n)
#include "hook/hooks.def"
}

static void publish_driver(const struct vr_real *r)
{
#define VR_HOOK_CU(n) vr_real.n = r->n;
#define VR_USE_CU(n)  VR_HOOK_CU(n)
#include "hook/hooks.def"
}

static void driver_failed(const char *err)
{
	vr_log(VR_LOG_ERROR,
	       "cannot load the CUDA driver (%s): %s; under the cap, the driver's memory "
	       "entry points fail: called by name they return CUDA_ERROR_NOT_INITIALIZED, "
	       "and dlsym/cuGetProcAddress find none of them (fail closed)",
	       vr_g.driver_path[0] ? vr_g.driver_path : "libcuda.so.1", err ? err : "not found");
}

static const char *nvml_path(void)
{
	return vr_g.nvml_path[0] ? vr_g.nvml_path : "libnvidia-ml.so.1";
}

static void *open_nvml(const char **err)
{
	(void)err;
	return dlopen(nvml_path(), RTLD_LAZY | RTLD_LOCAL);
}

static void resolve_nvml(struct vr_real *r, void *h)
{
#define VR_HOOK_NVML(n) r->n = (vr_pfn_##n)vr_dlsym_real(h, #n);
#define VR_USE_NVML(n)  VR_HOOK_NVML(n)
#include "hook/hooks.def"
}

static void publish_nvml(const struct vr_real *r)
{
#define VR_HOOK_NVML(n) vr_real.n = r->n;
#define VR_USE_NVML(n)  VR_HOOK_NVML(n)
#include "hook/hooks.def"
}

static void nvml_failed(const char *err)
{
	(void)err;
	vr_log(VR_LOG_WARN, "cannot load NVML (%s)", nvml_path());
}

static const struct lib driver_lib = {
    .state = &vr_g.driver_state,
    .handle = &vr_g.driver,
    .open = open_driver,
    .resolve = resolve_driver,
    .publish = publish_driver,
    .failed = driver_failed,
};
static const struct lib nvml_lib = {
    .state = &vr_g.nvml_state,
    .handle = &vr_g.nvml,
    .open = open_nvml,
    .resolve = resolve_nvml,
    .publish = publish_nvml,
    .failed = nvml_failed,
};

/*
 * Loading never holds a lock of ours across dlopen: dlopen takes the
 * loader's lock and runs constructors under it, and a constructor in another
 * thread calling a wrapper must not wait for us while we wait for the loader.
 * Every thread that finds the library missing opens and resolves it itself
 * (the same handle, the same pointers); the first to finish publishes under
 * a short lock. A thread re-entering from the library's own constructor gets
 * -1 (a driver call then returns CUDA_ERROR_NOT_INITIALIZED).
 */
static int load(const struct lib *l)
{
	vr_config_init();
	int s = atomic_load_explicit(l->state, memory_order_acquire);
	if (s != 0)
		return s < 0 ? -1 : 0; /* 1, or VR_DRIVER_GATED: loaded */
	if (loading)
		return -1;
	loading = 1;
	struct vr_real r;
	memset(&r, 0, sizeof r);
	const char *e = NULL;
	void *h;
	VR_OWN(h = l->open(&e); if (h) l->resolve(&r, h));
	loading = 0;

	pthread_mutex_lock(&driver_lock);
	s = atomic_load_explicit(l->state, memory_order_acquire);
	if (s == 0 && h) {
		l->publish(&r);
		*l->handle = h;
		s = 1;
		/* A process that may be parked has its gate shut from the start
		 * (park.c): every wrapper passes it too. */
		atomic_store_explicit(l->state,
		                      l == &driver_lib && vr_gate_pass ? VR_DRIVER_GATED : s,
		                      memory_order_release);
	} else if (s == 0) {
		/* Invisible mode stays silent: the program finds out itself. */
		if (vr_g.active)
			l->failed(e);
		s = -1;
		atomic_store_explicit(l->state, s, memory_order_release);
	}
	pthread_mutex_unlock(&driver_lock);
	return s == 1 ? 0 : -1;
}

/* The first driver call: what this process's jobs say is settled first
 * (job.h), so that a cap found without the environment holds from it on. */
int vr_driver_init(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_g.driver_state, memory_order_acquire) == 0))
		vr_job_resolve();
	return load(&driver_lib);
}

/* Set by a gate that kept its process parked, read once by vr__refusal. */
static __thread int stays_parked __attribute__((tls_model("initial-exec")));

int vr__enter_slow(void)
{
	if (atomic_load_explicit(&vr_g.driver_state, memory_order_acquire) == VR_DRIVER_GATED) {
		if (vr_in_hook || !vr_gate_pass || vr_gate_pass() == 0)
			return 0;
		stays_parked = 1;
		return -1;
	}
	return vr_driver_init() != 0 ? -1 : 0;
}

CUresult vr__refusal(void)
{
	if (!stays_parked)
		return CUDA_ERROR_NOT_INITIALIZED;
	stays_parked = 0;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* NVML, the same way, only when the program itself uses NVML. */
int vr_nvml_init(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_g.nvml_state, memory_order_acquire) == 0))
		vr_job_resolve();
	return load(&nvml_lib);
}

/* A lock another thread held at the fork is new in the child. */
static void real_atfork_child(void)
{
	pthread_mutex_init(&driver_lock, NULL);
}
VR_ATFORK_CHILD(real_atfork_child);
