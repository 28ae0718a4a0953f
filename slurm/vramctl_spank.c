/*
 * vramctl_spank.c - a SPANK plugin that makes a GPU memory cap part of a
 * Slurm job request: srun/sbatch/salloc --gpu-mem=SPEC.
 *
 * It re-implements nothing: on the node it sets vramctl's environment
 * contract (contract.h) for every task of the step and appends the library to
 * LD_PRELOAD; the injected library and the registry do the rest. All tasks of
 * a job on one node share one group, "slurm-<jobid>-<host>", so steps of the
 * same job (srun inside sbatch) share one cap there; the job epilog removes
 * the group's books when the job ends on the node.
 *
 * Where each part runs (spank(8)):
 *   srun, sbatch, salloc (local/allocator): the option's value is checked
 *     with the shared grammar before anything is queued;
 *   slurmstepd (remote), per task just before exec: the contract is set;
 *   slurmd's epilog (job_script), as root: the group's region is removed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "common/duration.h"
#include "common/spill.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "launch/launch.h"
#include "registry/registry.h"
#include "slurm/drvlimit.h"
#include "slurm/jobs.h"
#include "slurm/guarantee.h"
#include "slurm/policy.h"

/* The symbols Slurm's plugin loader looks for; everything else is hidden. */
#pragma GCC visibility push(default)
SPANK_PLUGIN(vramctl, 1);
#pragma GCC visibility pop

#define ENV_MAX 8192

/* Per process (srun, sbatch, one slurmstepd, one epilog run). */
static struct vr_slurm_conf conf;
static int conf_ok;
static char *user_value;     /* --gpu-mem's value, NULL when not given */
static int user_growth;      /* --gpu-mem-growth given */
static char *user_spill;     /* --gpu-mem-spill's value ("" without one), NULL when not given */
static char *user_guarantee; /* --gpu-mem-guarantee's value, NULL when not given */
static char *user_wait;      /* --gpu-mem-wait's TIME ("60s" without one), NULL when not given */
static char *user_park;      /* --gpu-mem-park-idle's DURATION or "manual", NULL when not given */
/* enforce=driver|both, per task: the driver holds the cap, or why not. */
static int driver_holds;
static char driver_msg[512];
/* The step's guarantee given in the device books (task_init_privileged),
 * or why not, for task_init (the same task process). */
static int guarantee_given;
static char guarantee_msg[512];

static int opt_gpu_mem(int val, const char *arg, int remote);
static int opt_growth(int val, const char *arg, int remote);
static int opt_spill(int val, const char *arg, int remote);
static int opt_guarantee(int val, const char *arg, int remote);
static int opt_wait(int val, const char *arg, int remote);
static int opt_park(int val, const char *arg, int remote);

/* Writable arrays: struct spank_option's fields are plain char *. */
static char name_mem[] = "gpu-mem", arg_mem[] = "SPEC",
            use_mem[] = "Cap the GPU memory of the job's tasks on each node, shared by them "
                        "(vramctl): SIZE (8G), PCT%, DEV=SIZE,...; 'none' opts out where the "
                        "site allows";
static char name_growth[] = "gpu-mem-growth",
            use_growth[] = "With --gpu-mem: frameworks that preallocate GPU memory grow on "
                           "demand instead (vramctl)";

static char name_spill[] = "gpu-mem-spill", arg_spill[] = "SIZE",
            use_spill[] = "With --gpu-mem: allocations past the cap go to host memory the GPU "
                          "reads in place (slower), up to SIZE for the job on each node "
                          "(default: a quarter of the node's available memory) (vramctl)";

static char name_guarantee[] = "gpu-mem-guarantee", arg_guarantee[] = "SPEC",
            use_guarantee[] = "With --gpu-mem: GPU memory the job's tasks on each node can always "
                              "reach, whatever other jobs do, up to the cap (same grammar) "
                              "(vramctl)";

static char name_wait[] = "gpu-mem-wait", arg_wait[] = "TIME",
            use_wait[] = "With --gpu-mem: an allocation the cap refuses waits up to TIME for "
                         "room (seconds, or 30s, 2m; default 60s), then is refused (vramctl)";

static char name_park[] = "gpu-mem-park-idle", arg_park[] = "DURATION",
            use_park[] = "With --gpu-mem: a task idle in its driver calls for DURATION is "
                         "parked, its GPU memory moved to host memory until its next call; "
                         "'manual': only vramctl park (vramctl)";

static struct spank_option options[] = {
    {name_mem, arg_mem, use_mem, 1, 0, opt_gpu_mem},
    {name_growth, NULL, use_growth, 0, 0, opt_growth},
    {name_spill, arg_spill, use_spill, 2, 0, opt_spill},
    {name_guarantee, arg_guarantee, use_guarantee, 1, 0, opt_guarantee},
    {name_wait, arg_wait, use_wait, 2, 0, opt_wait},
    {name_park, arg_park, use_park, 1, 0, opt_park},
    SPANK_OPTIONS_TABLE_END};

static int opt_gpu_mem(int val VR_UNUSED, const char *arg, int remote)
{
	char err[512];

	if (!arg)
		return -1;
	/* On the submitting side the value is checked at once, so a bad one
	 * never reaches the queue. The node checks again in vr_slurm_decide. */
	if (!remote) {
		struct vr_slurm_conf any = conf;

		any.allow_optout = 1; /* checked after all options, in init_post_opt */
		if (vr_slurm_check_value(arg, &any, err, sizeof(err))) {
			slurm_error("vramctl: %s", err);
			return -1;
		}
	}
	free(user_value);
	user_value = strdup(arg);
	return user_value ? 0 : -1;
}

static int opt_growth(int val VR_UNUSED, const char *arg VR_UNUSED, int remote VR_UNUSED)
{
	user_growth = 1;
	return 0;
}

/* The size is checked at once on the submitting side (the site's rule
 * after all options, in init_post_opt); "auto" is sized on the node. */
static int opt_spill(int val VR_UNUSED, const char *arg, int remote)
{
	char err[512];
	uint64_t budget;

	if (!remote && arg && arg[0] && strcasecmp(arg, "auto")) {
		struct vr_slurm_conf any = conf;

		any.allow_spill = 1;
		if (vr_slurm_spill(arg, &any, &budget, err, sizeof(err))) {
			slurm_error("vramctl: %s", err);
			return -1;
		}
	}
	free(user_spill);
	user_spill = strdup(arg ? arg : "");
	return user_spill ? 0 : -1;
}

/* A TIME (--gpu-mem-wait, --gpu-mem-park-idle; "manual" for the latter
 * when manual_ok) into *slot: checked at once, so a bad one never reaches
 * the queue. 0 or -1. */
static int keep_time(const char *opt, const char *arg, int manual_ok, char **slot)
{
	char err[256];
	uint64_t ms;
	if (!(manual_ok && !strcasecmp(arg, "manual")) &&
	    vr_parse_duration(arg, 0, &ms, err, sizeof(err)) < 0) {
		slurm_error("vramctl: --%s=%s: %s", opt, arg, err);
		return -1;
	}
	free(*slot);
	*slot = strdup(arg);
	return *slot ? 0 : -1;
}

static int opt_wait(int val VR_UNUSED, const char *arg, int remote VR_UNUSED)
{
	return keep_time(name_wait, arg && arg[0] ? arg : "60s", 0, &user_wait);
}

static int opt_park(int val VR_UNUSED, const char *arg, int remote VR_UNUSED)
{
	return arg ? keep_time(name_park, arg, 1, &user_park) : -1;
}

/* The value is checked at once on the submitting side (the site's rule and
 * the cap after all options, in init_post_opt); the node checks it against
 * the step's cap. */
static int opt_guarantee(int val VR_UNUSED, const char *arg, int remote)
{
	char err[512], spec[VR_SLURM_TEXT_MAX];

	if (!arg)
		return -1;
	if (!remote) {
		struct vr_slurm_conf any = conf;

		any.allow_guarantee = 1;
		if (vr_slurm_guarantee(arg, &any, NULL, spec, sizeof(spec), err, sizeof(err))) {
			slurm_error("vramctl: %s", err);
			return -1;
		}
	}
	free(user_guarantee);
	user_guarantee = strdup(arg);
	return user_guarantee ? 0 : -1;
}

VR_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av);
VR_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av);
VR_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av);
VR_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av);
VR_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av);
VR_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av);

/* The plugin's arguments reach every callback; in the job_script context
 * (the epilog) slurm_spank_init is not called, so each entry point loads
 * them if needed. Returns 0 or -1 after logging why. */
static int load_conf(int ac, char **av)
{
	char err[512];

	if (conf_ok)
		return 0;
	if (vr_slurm_parse_args(ac, av, &conf, err, sizeof(err))) {
		slurm_error("vramctl: plugstack.conf: %s", err);
		return -1;
	}
	conf_ok = 1;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	size_t i;

	/* slurmd itself only needs the epilog, which reports its own errors; a
	 * bad argument must not keep the node's daemon from starting. */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR) {
		load_conf(ac, av);
		return 0;
	}
	/* Everywhere else a bad argument fails the command or the step, with
	 * the message naming it (a "required" plugin's failure fails the job). */
	if (load_conf(ac, av))
		return -1;
	for (i = 0; i < VR_ARRAY_LEN(options) - 1; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("vramctl: cannot register --%s: %s", options[i].name,
			            spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* After every option is known: the site's opt-out rule, on the submitting
 * side, so `--gpu-mem=none` is refused before the job is queued. */
int slurm_spank_init_post_opt(spank_t sp VR_UNUSED, int ac VR_UNUSED, char **av VR_UNUSED)
{
	spank_context_t ctx = spank_context();
	char err[512];

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	if (user_value && vr_slurm_check_value(user_value, &conf, err, sizeof(err))) {
		slurm_error("vramctl: %s", err);
		return -1;
	}
	/* A guarantee: allowed here, and within --gpu-mem when that is given
	 * (without it the step's cap is the site's, known on the node). */
	if (user_guarantee) {
		struct vr_slurm_decision d = {.capped = 1, .source = "user"};
		int optout = user_value && !strcasecmp(user_value, VR_SLURM_OPTOUT);
		char spec[VR_SLURM_TEXT_MAX];

		if (user_value)
			snprintf(d.spec, sizeof(d.spec), "%s", user_value);
		d.capped = !optout;
		if (vr_slurm_guarantee(user_guarantee, &conf, user_value ? &d : NULL, spec,
		                       sizeof(spec), err, sizeof(err))) {
			slurm_error("vramctl: %s", err);
			return -1;
		}
	}
	if (user_spill && !conf.allow_spill) {
		uint64_t budget;

		vr_slurm_spill(user_spill, &conf, &budget, err, sizeof(err));
		slurm_error("vramctl: %s", err);
		return -1;
	}
	return 0;
}

/* The job environment's value of name, or NULL (buf holds it). */
static const char *job_getenv(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL;
}

static uint64_t shards_on_node(spank_t sp)
{
	char buf[64], *end;
	unsigned long long n;

	if (!job_getenv(sp, "SLURM_SHARDS_ON_NODE", buf, sizeof(buf)))
		return 0;
	errno = 0;
	n = strtoull(buf, &end, 10);
	if (errno || end == buf || *end)
		return 0;
	return n;
}

/* Slurm gave the step GPUs or shards on this node. */
static int is_gpu_step(spank_t sp)
{
	static const char *const vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
	                                   "SLURM_SHARDS_ON_NODE", "SLURM_GPUS_ON_NODE"};
	char buf[256];
	size_t i;

	for (i = 0; i < VR_ARRAY_LEN(vars); i++)
		if (job_getenv(sp, vars[i], buf, sizeof(buf)) && buf[0])
			return 1;
	return 0;
}

static int names_for(spank_t sp, uid_t uid, char *group, size_t glen, char *dir, size_t dlen)
{
	uint32_t jobid = 0;
	char host[256];

	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return -1;
	if (gethostname(host, sizeof(host)))
		return -1;
	host[sizeof(host) - 1] = '\0';
	if (vr_slurm_group_name(jobid, host, group, glen))
		return -1;
	if (vr_dir_pattern(conf.registry_dir, uid, dir, dlen))
		return -1;
	return 0;
}

/* The plugin's way of writing the contract: the task's environment. */
static int set_env(void *ctx, const char *name, const char *value, int overwrite)
{
	spank_t sp = ctx;
	spank_err_t rc;

	if (!value)
		return spank_unsetenv(sp, name) == ESPANK_SUCCESS ? 0 : -1;
	rc = spank_setenv(sp, name, value, overwrite);
	if (rc == ESPANK_ENV_EXISTS && !overwrite)
		return 0;
	if (rc != ESPANK_SUCCESS) {
		slurm_error("vramctl: cannot set %s: %s", name, spank_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * The job's LD_PRELOAD into buf: 1 when set, 0 when unset, -1 when it does
 * not fit (then it must be left alone: rewriting it would drop entries).
 */
static int get_preload(spank_t sp, char *buf, int len)
{
	spank_err_t rc = spank_getenv(sp, "LD_PRELOAD", buf, len);

	if (rc == ESPANK_SUCCESS)
		return 1;
	if (rc == ESPANK_ENV_NOEXIST)
		return 0;
	slurm_error("vramctl: cannot read LD_PRELOAD: %s", spank_strerror(rc));
	return -1;
}

/* A user who opts out inside a capped batch job: undo what the batch step's
 * environment passed down. */
static int undo_contract(spank_t sp)
{
	char cur[ENV_MAX];
	int have = get_preload(sp, cur, sizeof(cur));

	vr_contract_undo(conf.lib, have == 1 ? cur : NULL, set_env, sp);
	return 0;
}

/*
 * A step without the job's option (srun --export=NONE inside a capped batch
 * job drops it): the job's cap on this node, from its records (jobs.h).
 */
static void job_cap(spank_t sp, uid_t uid, struct vr_slurm_decision *d)
{
	char group[VR_GROUP_NAME_MAX + 1], dir[VR_SLURM_TEXT_MAX], spec[VR_SLURM_TEXT_MAX];

	if (d->capped || d->optout || names_for(sp, uid, group, sizeof(group), dir, sizeof(dir)) ||
	    !vr_slurm_jobs_cap(dir, group, spec, sizeof(spec)))
		return;
	d->capped = 1;
	d->source = "job";
	snprintf(d->spec, sizeof(d->spec), "%s", spec);
	snprintf(d->note, sizeof(d->note),
	         "vramctl: this step asked for no cap: the job's on this node applies (%.900s)",
	         spec);
}

/*
 * Per task, as root, before privileges are dropped: the job's registry
 * directory is made the user's own (0700), whatever another local user put
 * at that path first (/tmp/vramctl-<uid> can be created by anyone): no one
 * else can deny the job its books or split them.
 */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	struct vr_slurm_decision d;
	char group[VR_GROUP_NAME_MAX + 1], dir[VR_SLURM_TEXT_MAX], err[512];
	uid_t uid;
	gid_t gid;

	if (load_conf(ac, av))
		return -1;
	vr_slurm_decide(&conf, user_value, is_gpu_step(sp), shards_on_node(sp), &d);
	if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
		job_cap(sp, uid, &d);
	if (d.optout || !d.capped || geteuid() != 0)
		return 0;
	/* The driver's limit first: a task may move into the step's cgroup.
	 * Its soft limit is the guarantee (--gpu-mem-guarantee; task_init says
	 * one that does not fit). */
	if (conf.enforce & VR_ENFORCE_DRIVER) {
		char gspec[VR_SLURM_TEXT_MAX];
		vr_slurm_guarantee(user_guarantee, &conf, &d, gspec, sizeof(gspec), err,
		                   sizeof(err));
		driver_holds =
		    vr_slurm_driver_set(sp, &conf, d.spec, gspec, driver_msg, sizeof(driver_msg));
	}
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    names_for(sp, uid, group, sizeof(group), dir, sizeof(dir)))
		return 0; /* task_init says it */
	if (vr_prepare_user_dir(dir, uid, gid, err, sizeof(err)) < 0)
		slurm_error("vramctl: %s", err);
	/* The job is found without the environment (jobs.h): a task that
	 * clears it stays capped where the node preloads the library. */
	if (vr_slurm_jobs_publish(dir, group, uid, d.spec, err, sizeof(err)) < 0)
		slurm_error("vramctl: cannot record the job on this node (%s): a task that clears "
		            "its environment is not found by the library",
		            err);
	/* The guarantee, written into the device books by root: the
	 * library holds it, so only where the library enforces. */
	char gspec[VR_SLURM_TEXT_MAX];
	guarantee_given = 0;
	if ((conf.enforce & VR_ENFORCE_LIBRARY) &&
	    !vr_slurm_guarantee(user_guarantee, &conf, &d, gspec, sizeof(gspec), err,
	                        sizeof(err)) &&
	    gspec[0])
		guarantee_given = vr_slurm_guarantee_give(sp, &conf, d.spec, gspec, uid, group,
		                                          guarantee_msg, sizeof(guarantee_msg));
	return 0;
}

/*
 * The first task of the step on this node starts the watcher of the step's
 * processes outside the cap (jobs.h), its messages on the task's standard
 * error. Without it (watcher=none, no program there) those processes are
 * listed by `vramctl status`, not counted.
 */
static void start_watcher(spank_t sp, const char *dir, const char *group, const char *spec)
{
	uint32_t taskid = 1;
	char **env = NULL, err[512];

	if (!conf.watcher[0] || !strcmp(conf.watcher, "none") ||
	    spank_get_item(sp, S_TASK_ID, &taskid) != ESPANK_SUCCESS || taskid != 0 ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return;
	if (vr_slurm_watch(conf.watcher, dir, group, spec, env, err, sizeof(err)) < 0)
		slurm_spank_log("vramctl: the watcher of processes outside the cap did not start "
		                "(%s): they are listed by vramctl status, not counted",
		                err);
}

/*
 * Per task, as the user, just before exec: the contract. Runs for every
 * task, so each one's environment is complete whatever Slurm set per task
 * (the shard count, for one).
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct vr_slurm_decision d;
	char group[VR_GROUP_NAME_MAX + 1], dir[VR_SLURM_TEXT_MAX], cur[ENV_MAX], err[512];
	uid_t uid;
	int have;

	if (load_conf(ac, av))
		return -1;
	vr_slurm_decide(&conf, user_value, is_gpu_step(sp), shards_on_node(sp), &d);
	if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
		job_cap(sp, uid, &d);
	if (d.note[0])
		slurm_spank_log("%s", d.note);
	if (d.optout)
		return undo_contract(sp);
	if (!d.capped)
		return 0;
	/* A driver refusal: one line, and the library holds the cap. */
	if ((conf.enforce & VR_ENFORCE_DRIVER) && !driver_holds)
		slurm_spank_log("vramctl: the driver's memory limit was not set (%s); the library "
		                "holds the cap",
		                driver_msg[0] ? driver_msg : "not root");
	if (conf.enforce == VR_ENFORCE_DRIVER && driver_holds)
		return 0;
	if (names_for(sp, uid, group, sizeof(group), dir, sizeof(dir))) {
		slurm_error("vramctl: cannot name this job's group");
		return -1;
	}
	have = get_preload(sp, cur, sizeof(cur));
	if (have < 0) {
		slurm_error("vramctl: LD_PRELOAD too long to add %s: not capping", conf.lib);
		return -1;
	}
	/* Spill: the budget in bytes ("auto" sized on this node), or none. A
	 * value the site forbids, or that no longer parses here, leaves the
	 * cap as it is, without spill, and says so. */
	uint64_t budget = 0;
	char why[512];
	if (vr_slurm_spill(user_spill, &conf, &budget, why, sizeof(why)))
		slurm_spank_log("vramctl: %s; no spill", why);
	/* A guarantee the site forbids, or that does not fit the step's cap:
	 * said, and the cap holds without it. */
	char gspec[VR_SLURM_TEXT_MAX], token[24] = "";
	if (vr_slurm_guarantee(user_guarantee, &conf, &d, gspec, sizeof(gspec), why, sizeof(why)))
		slurm_spank_log("vramctl: %s; no guarantee", why);
	else if (gspec[0] && !guarantee_given) {
		slurm_spank_log("vramctl: the guarantee cannot be given: %s; no guarantee (the cap "
		                "holds)",
		                guarantee_msg[0] ? guarantee_msg : "not root");
		gspec[0] = '\0';
	} else if (gspec[0]) {
		snprintf(token, sizeof token, "%016" PRIx64, vr_slurm_guarantee_token(group));
	}
	/* Parking's host budget: a quarter of this node's available memory
	 * (the spill budget's "auto"). */
	uint64_t park_budget = 0;
	if (user_park && vr_parse_spill("auto", &park_budget, why, sizeof(why)))
		slurm_spank_log("vramctl: --gpu-mem-park-idle: %s; no host budget for parking",
		                why);
	struct vr_contract c = {.limit = d.spec,
	                        .guarantee = gspec[0] ? gspec : NULL,
	                        .token = token[0] ? token : NULL,
	                        .group = group,
	                        .registry_dir = dir,
	                        .growth = user_growth,
	                        .spill = budget,
	                        .wait = user_wait,
	                        .park_idle = user_park,
	                        .park_budget = park_budget,
	                        .lib = conf.lib,
	                        .cur_preload = have ? cur : NULL};
	if (vr_contract_apply(&c, set_env, sp, err, sizeof(err)) < 0) {
		slurm_error("vramctl: %s: not capping", err);
		return -1;
	}
	start_watcher(sp, dir, group, d.spec);
	/* The books the plugin wrote the guarantee into are the tasks'. */
	if (conf.device_dir[0] && set_env(sp, VR_ENV_DEVICE_DIR, conf.device_dir, 1) < 0)
		return -1;
	return 0;
}

/*
 * The job ends on this node: remove its group's books. slurmd runs this as
 * root once per job and node, after every step (srun, the batch script) is
 * gone. The registry refuses to touch files not owned by the caller, so this
 * acts as the job's user for the call.
 */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char group[VR_GROUP_NAME_MAX + 1], dir[VR_SLURM_TEXT_MAX];
	uid_t uid, euid = geteuid();
	gid_t gid, egid = getegid();
	int rc;

	if (load_conf(ac, av))
		return 0;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    names_for(sp, uid, group, sizeof(group), dir, sizeof(dir)))
		return 0;
	if (euid == 0)
		vr_slurm_jobs_withdraw(dir, group); /* its records on this node */
	if (euid == 0 && uid != 0) {
		if (setegid(gid) || seteuid(uid)) {
			slurm_error("vramctl: epilog: cannot act as uid %lu: %s",
			            (unsigned long)uid, strerror(errno));
			if (setegid(egid))
				slurm_error("vramctl: epilog: cannot restore gid");
			return 0;
		}
	}
	rc = vr_group_remove(dir, group);
	if (euid == 0 && uid != 0 && (seteuid(euid) || setegid(egid)))
		slurm_error("vramctl: epilog: cannot restore privileges");
	if (rc && rc != -ENOENT)
		slurm_error("vramctl: epilog: cannot remove group %s in %s: %s", group, dir,
		            strerror(-rc));
	else if (!rc)
		slurm_debug("vramctl: removed group %s in %s", group, dir);
	return 0; /* never drain a node over bookkeeping */
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	/* slurmstepd, as the step ends: the driver's limits cleared, the
	 * step's record gone (jobs.h). */
	if (spank_remote(sp) && geteuid() == 0 && !load_conf(ac, av) &&
	    (conf.enforce & VR_ENFORCE_DRIVER))
		vr_slurm_driver_clear(sp, &conf);
	if (spank_remote(sp) && geteuid() == 0)
		vr_slurm_jobs_step_end();
	free(user_value);
	user_value = NULL;
	free(user_spill);
	user_spill = NULL;
	free(user_guarantee);
	user_guarantee = NULL;
	free(user_wait);
	user_wait = NULL;
	free(user_park);
	user_park = NULL;
	return 0;
}
