/*
 * config.c - the environment contract (common/contract.h, config.h), read
 * once, from the constructor or from the first wrapper call, whichever
 * comes first; and which copy of the library acts in this process.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "common/contract.h"
#include "common/duration.h"
#include "common/hami.h"
#include "common/siteconf.h"
#include "common/spill.h"
#include "hook/atfork.h"
#include "hook/config.h"
#include "hook/dlreal.h"
#include "hook/log.h"

extern char **environ;

struct vr_state vr_g;
/* VRAMCTL_COUNT's text, read into vr_g.count_allocations. */
static char count_text[32];
/* VRAMCTL_SPILL's text, parsed into vr_g.spill_asked. */
static char spill_text[64];
/* VRAMCTL_WAIT, VRAMCTL_PARK_IDLE and VRAMCTL_PARK_BUDGET's texts. */
static char wait_text[32], park_text[32], park_budget_text[64];
/* VRAMCTL_GUARANTEE did not fit guarantee_text (read_guarantee decides). */
static int guarantee_long;

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
    {VR_ENV_GUARANTEE, OPT_TEXT, vr_g.guarantee_text, sizeof vr_g.guarantee_text, NULL,
     "guarantee spec, under a cap"},
    {VR_ENV_GROWTH, OPT_BOOL, NULL, 0, &vr_g.growth, "1: grow on demand"},
    {VR_ENV_SPILL, OPT_TEXT, spill_text, sizeof spill_text, NULL,
     "host budget for spill past the cap: SIZE, auto or 0"},
    {VR_ENV_COUNT, OPT_TEXT, count_text, sizeof count_text, NULL,
     "what the cap counts: card or allocations"},
    {VR_ENV_WAIT, OPT_TEXT, wait_text, sizeof wait_text, NULL,
     "how long a refused allocation waits for room: TIME (30s, 2m) or 0"},
    {VR_ENV_PARK_IDLE, OPT_TEXT, park_text, sizeof park_text, NULL,
     "park this process after DURATION idle, or manual"},
    {VR_ENV_PARK_BUDGET, OPT_TEXT, park_budget_text, sizeof park_budget_text, NULL,
     "host budget for the group's parked members: SIZE, auto or 0"},
    {VR_ENV_GROUP, OPT_TEXT, vr_g.group, sizeof vr_g.group, NULL, "group name"},
    {VR_ENV_REGISTRY_DIR, OPT_TEXT, vr_g.registry_dir, sizeof vr_g.registry_dir, NULL,
     "registry directory"},
    {VR_ENV_DRIVER, OPT_TEXT, vr_g.driver_path, sizeof vr_g.driver_path, NULL,
     "path of the real libcuda.so.1"},
    {VR_ENV_NVML, OPT_TEXT, vr_g.nvml_path, sizeof vr_g.nvml_path, NULL,
     "path of the real libnvidia-ml.so.1"},
    {VR_ENV_LOG, OPT_LOG, NULL, 0, &vr_log_verbosity, "quiet|error|warn|info|debug"},
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

/* One option's value v (from the environment, or a job's contract found
 * without it: job.c). */
static void set_option(const struct vr_option *o, const char *v)
{
	switch (o->kind) {
	case OPT_TEXT:
		if (strlen(v) >= o->len) {
			/* A cap that cannot be read must not become no cap. */
			if (o->text == vr_g.limit_text) {
				vr_g.limit_bad = 1;
				config_error("%s is too long (over %zu characters); every device "
				             "allocation is refused (fail closed)",
				             o->env, o->len - 1);
			} else if (o->text == vr_g.guarantee_text) {
				guarantee_long = 1;
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

/* set-ID programs (the machine's preload reaches them) take nothing from
 * the environment: paths there (the driver, the books) would be another
 * user's choice. Their cap can only come from a job (job.c). */
static void read_option(const struct vr_option *o)
{
	const char *v = secure_getenv(o->env);
	if (v)
		set_option(o, v);
}

int vr_config_set(const char *name, const char *value)
{
	for (size_t i = 0; i < VR_ARRAY_LEN(options); i++) {
		if (!strcmp(options[i].env, name)) {
			set_option(&options[i], value);
			return 0;
		}
	}
	return -1;
}

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
	if (getauxval(AT_SECURE))
		return; /* set-ID: nothing from the environment (read_option) */
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
	if (!secure_getenv(VR_ENV_GROUP) && h.group[0])
		snprintf(vr_g.group, sizeof vr_g.group, "%s", h.group);
	if (!secure_getenv(VR_ENV_REGISTRY_DIR) && h.dir[0])
		snprintf(vr_g.registry_dir, sizeof vr_g.registry_dir, "%s", h.dir);
	if (!secure_getenv(VR_ENV_LOG) && h.log_level >= 0)
		vr_log_verbosity = h.log_level;
}

/*
 * Is there a cap, and can it be read? The admin's file: a maximum holds
 * even without VRAMCTL_LIMIT, and a file that cannot be used fails closed
 * (vramctl.conf(5)). Sets vr_g.active, vr_g.limits and vr_g.limit_bad.
 */
static void read_cap(void)
{
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
}

/*
 * The guarantee, after the cap is known: only under a cap (a guarantee is a
 * share within it; without one it is said and ignored, the program runs as
 * it would without it). One that cannot be read fails closed, as a cap that
 * cannot be read: whoever set it asked for a policy the library cannot keep.
 */
static void read_guarantee(void)
{
	char err[256];

	if (!vr_g.guarantee_text[0] && !guarantee_long)
		return;
	if (!vr_g.active) {
		config_error("%s is set without a cap (%s unset): ignored", VR_ENV_GUARANTEE,
		             VR_ENV_LIMIT);
		return;
	}
	if (vr_g.limit_bad)
		return;
	if (guarantee_long) {
		vr_g.limit_bad = 1;
		config_error("%s is too long (over %zu characters); every device allocation is "
		             "refused (fail closed)",
		             VR_ENV_GUARANTEE, sizeof vr_g.guarantee_text - 1);
	} else if (vr_parse_limits(vr_g.guarantee_text, &vr_g.guarantees, err, sizeof err) != 0) {
		vr_g.limit_bad = 1;
		config_error("%s: %s; every device allocation is refused (fail closed)",
		             VR_ENV_GUARANTEE, err);
	}
}

uint64_t vr_config_guarantee(int ordinal, const char *uuid_text, uint64_t phys_total, uint64_t cap)
{
	uint64_t g;

	if (vr_g.limit_bad || cap == UINT64_MAX || !vr_g.guarantees.count ||
	    !vr_limits_cap_for(&vr_g.guarantees, ordinal, uuid_text, phys_total, &g))
		return 0;
	return g < cap ? g : cap;
}

/* Waiting and parking, additions to a cap like spill: a value that
 * cannot be read is said once and means none (the cap itself stays). */
static void read_wait_park(void)
{
	char err[256];
	uint64_t ms = 0;
	if (wait_text[0] && vr_parse_duration(wait_text, 1, &ms, err, sizeof err) != 0)
		config_error("%s: %s; allocations the cap refuses do not wait", VR_ENV_WAIT, err);
	else
		vr_g.wait_ms = ms;
	ms = 0;
	if (!strcasecmp(park_text, "manual"))
		ms = VR_PARK_MANUAL;
	else if (park_text[0] && vr_parse_duration(park_text, 0, &ms, err, sizeof err) != 0)
		config_error("%s: %s; this process is never parked", VR_ENV_PARK_IDLE, err);
	vr_g.park_idle_ms = ms;
	uint64_t budget = 0;
	const char *b = park_budget_text[0] ? park_budget_text : "auto";
	if (vr_g.park_idle_ms && vr_parse_spill(b, &budget, err, sizeof err) != 0)
		config_error("%s: %s; no host budget for parking", VR_ENV_PARK_BUDGET, err);
	vr_g.park_budget_asked = vr_g.park_idle_ms ? budget : 0;
}

/* Under a cap that can be read: the registry directory, then spill. */
static void check_under_cap(void)
{
	/* What the cap counts: anything but "allocations" keeps the stricter
	 * meaning, the card's (a word that cannot be read is said). */
	if (!strcmp(count_text, "allocations"))
		vr_g.count_allocations = 1;
	else if (count_text[0] && strcmp(count_text, "card") != 0 && vr_g.active)
		config_error("%s=%s: expected card or allocations; the cap counts what the card "
		             "holds (card)",
		             VR_ENV_COUNT, count_text);
	if (!vr_g.active || vr_g.limit_bad)
		return;
	/* A relative registry directory would split one group by working
	 * directory (each process its own books under a shared cap); launchers
	 * make it absolute, and a hand-set relative one fails closed. */
	if (vr_g.registry_dir[0] && vr_g.registry_dir[0] != '/') {
		vr_g.limit_bad = 1;
		config_error("%s=%s is not an absolute path (processes in other directories "
		             "would keep other books); every device allocation is refused (fail "
		             "closed)",
		             VR_ENV_REGISTRY_DIR, vr_g.registry_dir);
		return;
	}
	read_wait_park();
	/* Spill is an addition to a cap: a bad budget is said once and means no
	 * spill (the cap itself stays). */
	if (spill_text[0]) {
		char err[256];
		uint64_t budget = 0;
		if (vr_parse_spill(spill_text, &budget, err, sizeof err) != 0)
			config_error("VRAMCTL_SPILL: %s; no spill (the cap applies as usual)", err);
		else
			vr_g.spill_asked = budget;
	}
}

int vr_config_foreign(void)
{
	/* Are we the acting copy? Ask the loader for the first marker. And
	 * vramctl's own programs (src/cli/self.c) show the card, never a cap. */
	const char *first = vr_dlsym_real(RTLD_DEFAULT, "vramctl_instance_v1");
	return (first && first != marker) || vr_dlsym_real(RTLD_DEFAULT, "vramctl_cli_v1");
}

void vr_config_settle(void)
{
	if (vr_g.settled)
		return;
	vr_g.settled = 1;
	read_cap();
	read_guarantee();
	check_under_cap();

	if (vr_config_foreign()) {
		vr_g.passthrough = 1;
		vr_g.active = 0;
	}

	for (int i = 0; i < nconfig_errors && !vr_g.passthrough; i++)
		vr_log(VR_LOG_ERROR, "%s", config_errors[i]);
	nconfig_errors = 0;

	if (vr_g.active) {
		vr_log(VR_LOG_INFO, "cap %s%s%s%s%s", vr_g.limit_text,
		       vr_g.guarantees.count ? ", guarantee " : "",
		       vr_g.guarantees.count ? vr_g.guarantee_text : "",
		       vr_g.group[0] ? ", group " : "", vr_g.group);
		vr_atfork_register();
	}
}

/*
 * The environment alone, at the constructor: a process whose environment
 * holds a cap (VRAMCTL_LIMIT, HAMi's) settles it now, as it always did.
 * Any other process stops here: no file read, no look-up. Whether it has a
 * cap after all (a job found without the environment, the site's maximum
 * or per-user cap) is decided at its first driver call (job.c), so that a
 * program that never calls the driver pays nothing more under the
 * machine's preload.
 */
/* Does the environment hold anything for vramctl (its variables, HAMi's
 * caps)? One pass: under the machine's preload every program on the host
 * asks, and most have nothing. */
static int env_has_ours(void)
{
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "VRAMCTL_", 8) || !strncmp(*e, "CUDA_DEVICE_MEMORY_LIMIT", 24))
			return 1;
	return 0;
}

static void config_init_once(void)
{
	if (env_has_ours()) {
		for (size_t i = 0; i < VR_ARRAY_LEN(options); i++)
			read_option(&options[i]);
		read_hami();
	}
	vr_g.env_contract = vr_g.limit_text[0] || vr_g.limit_bad;
	if (vr_g.env_contract)
		vr_config_settle();
	atomic_store_explicit(&vr_g.config_done, 1, memory_order_release);
}

void vr_config_init(void)
{
	if (VR_LIKELY(atomic_load_explicit(&vr_g.config_done, memory_order_acquire)))
		return;
	pthread_once(&config_once, config_init_once);
}
