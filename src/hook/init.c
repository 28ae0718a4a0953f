/*
 * init.c - configuration, driver loading and the process lifecycle.
 *
 * Three stages, each lazy and idempotent:
 *   1. configuration: the environment contract (contract.h), read once from
 *      the constructor or from the first wrapper call, whichever comes first;
 *   2. the driver: dlopen'ed at the first driver call that reaches a wrapper
 *      (never in the constructor: every process under `vramctl run`, shells
 *      included, loads this library, and most never touch a GPU);
 *   3. the books: joined at the first allocation or memory query under a cap
 *      (devices.c, books.c).
 * With no VRAMCTL_LIMIT the library is invisible: wrappers test one flag and
 * call the driver; dlsym and cuGetProcAddress return the driver's pointers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "common/contract.h"
#include "common/hami.h"
#include "common/siteconf.h"
#include "common/spill.h"
#include "hook/books.h"
#include "hook/record.h"
#include "hook/devices.h"
#include "hook/pools.h"
#include "hook/ptrmap.h"
#include "hook/spill.h"

extern char **environ;

struct vr_state vr_g = {.log_level = VR_LOG_WARN};
struct vr_real vr_real;
__thread int vr_in_hook __attribute__((tls_model("initial-exec")));

/*
 * The process-wide marker: the first copy of the library in the global
 * search order owns the process; any other copy (LD_PRELOAD naming two
 * paths, a copy dlopen'ed later) finds someone else's marker and becomes a
 * pure pass-through, so nothing is counted twice.
 */
static const char marker[] = "vramctl";
/* The exported name is an alias: a reference to it from inside a copy goes
 * through the GOT and finds the first copy's, so identity is checked against
 * the local name. */
extern const char vramctl_instance_v1[sizeof marker]
    __attribute__((alias("marker"), visibility("default")));

/* ---- the options table ------------------------------------------------ */

enum opt_kind { OPT_TEXT, OPT_BOOL, OPT_LOG };

static const struct vr_option {
	const char *env;
	enum opt_kind kind;
	char *text; /* OPT_TEXT: destination */
	size_t len;
	int *flag; /* OPT_BOOL, OPT_LOG: destination */
	const char *help;
} options[] = {
    {VR_ENV_LIMIT, OPT_TEXT, vr_g.limit_text, sizeof vr_g.limit_text, NULL,
     "cap spec; unset or empty: no cap (invisible)"},
    {VR_ENV_GROWTH, OPT_BOOL, NULL, 0, &vr_g.growth, "1: grow on demand"},
    {VR_ENV_SPILL, OPT_TEXT, vr_g.spill_text, sizeof vr_g.spill_text, NULL,
     "host budget for spill past the cap: SIZE, auto or 0"},
    {VR_ENV_GROUP, OPT_TEXT, vr_g.group, sizeof vr_g.group, NULL, "group name"},
    {VR_ENV_REGISTRY_DIR, OPT_TEXT, vr_g.registry_dir, sizeof vr_g.registry_dir, NULL,
     "registry directory"},
    {VR_ENV_DRIVER, OPT_TEXT, vr_g.driver_path, sizeof vr_g.driver_path, NULL,
     "path of the real libcuda.so.1"},
    {VR_ENV_NVML, OPT_TEXT, vr_g.nvml_path, sizeof vr_g.nvml_path, NULL,
     "path of the real libnvidia-ml.so.1"},
    {VR_ENV_LOG, OPT_LOG, NULL, 0, &vr_g.log_level, "quiet|error|warn|info|debug"},
    {VR_ENV_RECORD_DIR, OPT_TEXT, vr_g.record_dir, sizeof vr_g.record_dir, NULL,
     "the run's report/trace directory (vramctl run --report/--trace)"},
    {VR_ENV_RECORD, OPT_TEXT, vr_g.record_flags, sizeof vr_g.record_flags, NULL,
     "report,trace,stacks"},
};

static const char *const log_names[] = {"quiet", "error", "warn", "info", "debug"};

/* Errors found while reading options are printed after the log level is
 * known (an option read early must not decide whether a later one speaks). */
static char config_errors[4][600];
static int nconfig_errors;

static void config_error(const char *fmt, ...) VR_PRINTF(1, 2);
static void config_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (nconfig_errors < (int)VR_ARRAY_LEN(config_errors))
		vsnprintf(config_errors[nconfig_errors++], sizeof config_errors[0], fmt, ap);
	va_end(ap);
}

static void read_option(const struct vr_option *o)
{
	const char *v = getenv(o->env);
	if (!v)
		return;
	switch (o->kind) {
	case OPT_TEXT:
		if (strlen(v) >= o->len) {
			/* A cap that cannot be read must not become no cap. */
			if (o->text == vr_g.limit_text) {
				vr_g.limit_bad = 1;
				config_error("%s is too long (over %zu characters); every device "
				             "allocation is refused (fail closed)",
				             o->env, o->len - 1);
			} else {
				config_error("%s is too long; ignored (%s)", o->env, o->help);
			}
			return;
		}
		strcpy(o->text, v);
		break;
	case OPT_BOOL:
		if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
			*o->flag = 1;
		else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !*v)
			*o->flag = 0;
		else
			config_error("%s=%s: expected 1 or 0; taken as 0", o->env, v);
		break;
	case OPT_LOG:
		for (size_t i = 0; i < VR_ARRAY_LEN(log_names); i++) {
			if (!strcasecmp(v, log_names[i])) {
				*o->flag = (int)i;
				return;
			}
		}
		config_error("%s=%s: expected quiet, error, warn, info or debug; using warn",
		             o->env, v);
		break;
	}
}

static void atfork_child(void);
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/*
 * HAMi's contract (common/hami.h), for containers started by HAMi's device
 * plugin with vramctl's library in place of libvgpu.so. One rule when both
 * are set: a non-empty VRAMCTL_LIMIT wins and HAMi's variables are ignored;
 * otherwise HAMi's caps apply, and each of VRAMCTL_GROUP,
 * VRAMCTL_REGISTRY_DIR and VRAMCTL_LOG, when set, still wins over what is
 * derived from HAMi's shared-cache path and log level. A malformed HAMi cap
 * fails closed, as a malformed VRAMCTL_LIMIT does.
 */
static void read_hami(void)
{
	struct vr_hami h;
	char err[300] = "", warn[600] = "";
	int rc = vr_hami_read((const char *const *)environ, &h, err, sizeof err, warn, sizeof warn);

	if (vr_g.limit_text[0] || vr_g.limit_bad) {
		if (rc != 0 || h.present)
			config_error("both VRAMCTL_LIMIT and HAMi's CUDA_DEVICE_MEMORY_LIMIT are "
			             "set; VRAMCTL_LIMIT applies");
		return;
	}
	if (warn[0])
		config_error("%s", warn);
	if (rc != 0) {
		vr_g.limit_bad = 1;
		config_error("%s; every device allocation is refused (fail closed)", err);
		return;
	}
	if (!h.present)
		return;
	snprintf(vr_g.limit_text, sizeof vr_g.limit_text, "%s", h.limit);
	if (!getenv(VR_ENV_GROUP) && h.group[0])
		snprintf(vr_g.group, sizeof vr_g.group, "%s", h.group);
	if (!getenv(VR_ENV_REGISTRY_DIR) && h.dir[0])
		snprintf(vr_g.registry_dir, sizeof vr_g.registry_dir, "%s", h.dir);
	if (!getenv(VR_ENV_LOG) && h.log_level >= 0)
		vr_g.log_level = h.log_level;
}

static void config_init_once(void)
{
	for (size_t i = 0; i < VR_ARRAY_LEN(options); i++)
		read_option(&options[i]);
	read_hami();

	/* The admin's file: a maximum holds even without VRAMCTL_LIMIT, and a
	 * file that cannot be used fails closed (vramctl.conf(5)). */
	const struct vr_site *site = vr_site_get();
	if (site->bad) {
		vr_g.limit_bad = 1;
		config_error("%s; every device allocation is refused (fail closed)", site->err);
	}

	if (vr_g.limit_bad) {
		vr_g.active = 1; /* unreadable cap or config: fail closed */
	} else if (vr_g.limit_text[0]) {
		char err[256];
		if (vr_parse_limits(vr_g.limit_text, &vr_g.limits, err, sizeof err) != 0) {
			/* Fail closed: whoever set a cap wants one. The CLI and the
			 * Slurm plugin validate first, so this is a hand-set value. */
			vr_g.limit_bad = 1;
			config_error("VRAMCTL_LIMIT: %s; every device allocation is refused "
			             "(fail closed)",
			             err);
		}
		vr_g.active = 1;
	} else if (vr_site_has_max(site)) {
		vr_g.active = 1;
	}

	/* A relative registry directory would split one group by working
	 * directory (each process its own books under a shared cap); launchers
	 * make it absolute, and a hand-set relative one fails closed. */
	if (vr_g.active && !vr_g.limit_bad && vr_g.registry_dir[0] && vr_g.registry_dir[0] != '/') {
		vr_g.limit_bad = 1;
		config_error("%s=%s is not an absolute path (processes in other directories "
		             "would keep other books); every device allocation is refused (fail "
		             "closed)",
		             VR_ENV_REGISTRY_DIR, vr_g.registry_dir);
	}
	/* Spill is an addition to a cap: a bad budget is said once and means no
	 * spill (the cap itself stays). */
	if (vr_g.active && !vr_g.limit_bad && vr_g.spill_text[0]) {
		char err[256];
		uint64_t budget = 0;
		if (vr_parse_spill(vr_g.spill_text, &budget, err, sizeof err) != 0)
			config_error("VRAMCTL_SPILL: %s; no spill (the cap applies as usual)", err);
		else
			vr_g.spill_budget = budget;
	}

	/* Are we the acting copy? Ask the loader for the first marker. */
	const char *first = vr_dlsym_real(RTLD_DEFAULT, "vramctl_instance_v1");
	if (first && first != marker) {
		vr_g.passthrough = 1;
		vr_g.active = 0;
	}

	for (int i = 0; i < nconfig_errors && !vr_g.passthrough; i++)
		vr_log(VR_LOG_ERROR, "%s", config_errors[i]);

	if (vr_g.active) {
		vr_log(VR_LOG_INFO, "cap %s%s%s", vr_g.limit_text, vr_g.group[0] ? ", group " : "",
		       vr_g.group);
		pthread_atfork(NULL, NULL, atfork_child);
		vr_teardown_setup();
	}
	atomic_store_explicit(&vr_g.config_done, 1, memory_order_release);
}

void vr_config_init(void)
{
	if (VR_LIKELY(atomic_load_explicit(&vr_g.config_done, memory_order_acquire)))
		return;
	pthread_once(&config_once, config_init_once);
}

/* ---- the driver ------------------------------------------------------- */

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
		return s == 1 ? 0 : -1;
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
		atomic_store_explicit(l->state, s, memory_order_release);
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

int vr_driver_init(void)
{
	return load(&driver_lib);
}

/* NVML, the same way, only when the program itself uses NVML. */
int vr_nvml_init(void)
{
	return load(&nvml_lib);
}

/* ---- lifecycle -------------------------------------------------------- */

/*
 * In a child after fork: the CUDA state of the parent does not carry over,
 * so neither do its books. Each module forgets what it holds (and makes new
 * the locks another thread may have held at the fork); the child joins anew
 * at its first allocation. This is the one fork handler; modules never call
 * each other's.
 */
static void atfork_child(void)
{
	pthread_mutex_init(&driver_lock, NULL);
	vr_pools_atfork_child();
	vr_spill_atfork_child();
	vr_map_atfork_child();
	vr_devices_atfork_child();
	vr_books_atfork_child();
	vr_rec_atfork_child();
	vr_teardown_atfork_child();
}

/*
 * --growth without the CLI (Slurm, Kubernetes, a user setting
 * VRAMCTL_GROWTH=1): the frameworks' own switches, set only when the user has
 * not set them. This is the one change the library makes to the environment,
 * and it was asked for; it runs in the constructor, before main and before
 * the program has threads of its own, where setenv is safe.
 */
static void apply_growth(void)
{
	if (!vr_g.growth || vr_g.passthrough)
		return;
	setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true", 0);
	setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false", 0);
}

__attribute__((constructor)) static void vr_constructor(void)
{
	vr_config_init();
	apply_growth();
	if (vr_g.active) {
		vr_rec_prime();
		vr_map_prepare();
	}
}
