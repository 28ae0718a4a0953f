/*
 * run.c - `vramctl run [--limit SPEC]... [--guarantee SPEC]... [--spill[=SIZE]] [--growth]
 *          [--wait[=TIME]] [--park-idle=DURATION] [--group NAME] [--] COMMAND [ARG...]`
 *
 * The CLI re-implements no policy: it parses the options, checks the cap
 * the user typed against the devices the command will see, writes the
 * environment contract and LD_PRELOAD for the child and joins the group
 * through the launchers' module (src/launch), keeps the group's books alive
 * for the run by being a member itself, and removes them when a run that
 * created them ends. The injected library does the enforcing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/libexec.h"
#include "cli/admit.h"
#include "cli/devices.h"
#include "cli/options.h"
#include "cli/paths.h"
#include "cli/run_enforce.h"
#include "cli/run_job.h"
#include "cli/site.h"
#include "cli/spawn.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "common/duration.h"
#include "common/enforce.h"
#include "common/exit.h"
#include "common/siteconf.h"
#include "common/size.h"
#include "common/spill.h"
#include "launch/launch.h"
#include "monitor/nvml.h"
#include "registry/registry.h"

/* Defined only in libexec/vramctl-run (src/report, linked there); NULL in
 * vramctl itself, which then hands --report/--trace runs to that program. */
#pragma weak rep_prepare
#pragma weak rep_finish
#pragma weak rep_escaped
#pragma weak rep_reaped
#include "report/report.h"

static void run_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: vramctl run [--limit SPEC]... [--guarantee SPEC]... [--spill[=SIZE]]\n"
	    "                   [--wait[=TIME]] [--park-idle=DURATION] [--park-budget SIZE]\n"
	    "                   [--growth] [--group NAME] [--count card|allocations]\n"
	    "                   [--enforce library|driver|both] [--report[=FILE]] [--stacks]\n"
	    "                   [--trace FILE] [--trace-max SIZE] [--exec] [--] COMMAND [ARG...]\n"
	    "\n"
	    "Runs COMMAND, and every process it starts, under a GPU memory cap.\n"
	    "\n"
	    "  -l, --limit SPEC  the cap: SIZE or PCT%% for every device, or DEV=SIZE|PCT%%\n"
	    "                    for one (DEV: the program's device index or a GPU UUID);\n"
	    "                    comma-separated or repeated: --limit 0=4G,1=50%%\n"
	    "                    SIZE units: B, K, M, G, T (also KB/KiB...), powers of 1024\n"
	    "  --guarantee SPEC  memory the group can always reach on each device it names,\n"
	    "                    whatever other groups do (same grammar; at most the cap\n"
	    "                    there); needs --limit\n"
	    "  --spill[=SIZE]    past the cap, allocations that can (cuMemAlloc, pitch,\n"
	    "                    cuMemCreate) go to host memory the GPU reads in place,\n"
	    "                    slower, up to SIZE for the whole group (default auto: a\n"
	    "                    quarter of the host's available memory); needs --limit\n"
	    "  --wait[=TIME]     an allocation the cap (or another group's guarantee)\n"
	    "                    refuses waits up to TIME for room (seconds, or 30s, 2m;\n"
	    "                    default 60s), served in arrival order, then is refused as\n"
	    "                    usual; one that could never be served fails at once\n"
	    "  --park-idle=DURATION  a process whose driver calls stay idle for DURATION\n"
	    "                    is parked: its GPU memory moves to host memory (the\n"
	    "                    driver's checkpoint API) until its next driver call;\n"
	    "                    \"manual\": only `vramctl park` and guarantees park it\n"
	    "  --park-budget SIZE  host memory the group's parked processes may hold\n"
	    "                    (default auto: a quarter of the host's available memory)\n"
	    "  --growth          frameworks that preallocate (TensorFlow, JAX) grow on\n"
	    "                    demand instead\n"
	    "  --count WHAT      what the cap counts: card (default: all the card holds\n"
	    "                    for each process, its context and the driver's use\n"
	    "                    included, as nvidia-smi counts it) or allocations (only\n"
	    "                    what the program allocates)\n"
	    "  --enforce WHO     who holds the cap: library (default: the injected\n"
	    "                    library), driver (the NVIDIA driver's own per-cgroup\n"
	    "                    limit, R615+, cgroup v2, root: the command runs in a\n"
	    "                    cgroup of its own) or both\n"
	    "  --group NAME      share one cap per device with every process run with the\n"
	    "                    same NAME (default: a new group for this run)\n"
	    "  --exec            become COMMAND instead of waiting for it (needs --group;\n"
	    "                    the group's books stay for its next members)\n"
	    "  --report[=FILE]   when the command ends: peaks, counts, denials, memory\n"
	    "                    still allocated at exit (leaks) per device and process;\n"
	    "                    text on stderr, or into FILE (JSON if FILE ends .json)\n"
	    "  --stacks          --report with the call site of each leaked block\n"
	    "  --trace FILE      a memory timeline in Chrome trace-event JSON (Perfetto,\n"
	    "                    chrome://tracing, vramctl plot)\n"
	    "  --trace-max SIZE  bound on the trace's disk use (default 1G): FILE rotates\n"
	    "                    to FILE.1 at half of it\n"
	    "  -h, --help        this text\n"
	    "\n"
	    "Exit status: COMMAND's own; 125 vramctl's error; 126 not executable;\n"
	    "127 not found; 128+N if COMMAND died of signal N. See vramctl-run(1).\n");
}

static void unique_group(char *buf, size_t len)
{
	unsigned int r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* No entropy yet: the PID and the clock still make it unique
		 * among live runs, which is what matters. */
		r = (unsigned int)getpid() * 2654435761u ^ (unsigned int)time(NULL);
	}
	snprintf(buf, len, "run-%d-%08x", (int)getpid(), r);
}

/* What the options ask for. */
struct run_req {
	struct vr_limits lim;
	const char *group_opt; /* --group, or NULL: a new group for this run */
	struct vr_limits gua;  /* --guarantee */
	char gspec[4096];      /* the guarantee normalised, for VRAMCTL_GUARANTEE */
	int growth, have_limit, have_spill, have_guarantee, exec_self;
	const char *wait;      /* --wait's TIME ("60s" bare), or NULL */
	uint64_t wait_ms;      /* the same in ms, 0 without --wait */
	const char *park_idle; /* --park-idle's DURATION or "manual", or NULL */
	uint64_t park_budget;  /* --park-budget (default auto) */
	int have_park_budget;
	const char *count; /* --count, or NULL: the environment's (default card) */
	uint64_t spill;
	struct rep_opts ro;      /* --report, --stacks, --trace, --trace-max */
	int cmd;                 /* argv's index of COMMAND */
	enum vr_enforce enforce; /* --enforce (default library) */
};

/* What the steps of cmd_run return to say "carry on" (not an exit status). */
#define RUN_GO (-1)

/* run's options; long-only ones take values from 256 up. */
enum {
	OPT_GROWTH = 256,
	OPT_EXEC,
	OPT_SPILL,
	OPT_REPORT,
	OPT_STACKS,
	OPT_TRACE,
	OPT_TRACE_MAX,
	OPT_GROUP,
	OPT_COUNT,
	OPT_GUARANTEE,
	OPT_ENFORCE,
	OPT_WAIT,
	OPT_PARK_IDLE,
	OPT_PARK_BUDGET
};

static const struct option run_opts[] = {
    {"limit", required_argument, NULL, 'l'},
    {"guarantee", required_argument, NULL, OPT_GUARANTEE},
    {"spill", optional_argument, NULL, OPT_SPILL},
    {"wait", optional_argument, NULL, OPT_WAIT},
    {"park-idle", required_argument, NULL, OPT_PARK_IDLE},
    {"park-budget", required_argument, NULL, OPT_PARK_BUDGET},
    {"growth", no_argument, NULL, OPT_GROWTH},
    {"group", required_argument, NULL, OPT_GROUP},
    {"count", required_argument, NULL, OPT_COUNT},
    {"enforce", required_argument, NULL, OPT_ENFORCE},
    {"exec", no_argument, NULL, OPT_EXEC},
    {"report", optional_argument, NULL, OPT_REPORT},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-max", required_argument, NULL, OPT_TRACE_MAX},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A spill budget past the host's available memory cannot all be served:
 * said once, with what really holds. */
static void spill_note(uint64_t budget, const char *v)
{
	uint64_t avail = vr_host_available();
	char a[32], b[32];

	if (!v || !avail || budget <= avail)
		return;
	fprintf(stderr,
	        "vramctl: --spill=%s is more than this host's available memory (%s of %s "
	        "asked): at most %s can be served from host memory\n",
	        v, vr_format_size(avail, a, sizeof a), vr_format_size(budget, b, sizeof b),
	        vr_format_size(avail, a, sizeof a));
}

/* One option c with its value v. RUN_GO, or the exit status. */
static int run_option(struct run_req *r, int c, const char *v)
{
	char err[512];

	switch (c) {
	case 'h':
		run_usage(stdout);
		return 0;
	case OPT_GROWTH:
		r->growth = 1;
		break;
	case OPT_EXEC:
		r->exec_self = 1;
		break;
	case OPT_ENFORCE:
		if (vr_enforce_parse(v, &r->enforce) < 0)
			return cli_usage_error("run",
			                       "--enforce %s: expected library, driver or both", v);
		break;
	case OPT_COUNT:
		if (strcmp(v, "card") != 0 && strcmp(v, "allocations") != 0)
			return cli_usage_error("run", "--count %s: expected card or allocations",
			                       v);
		r->count = v;
		break;
	case OPT_SPILL:
		/* --spill[=SIZE]: the value only with '=' (a separate word is the
		 * command). "auto" is sized now, for the whole run. */
		if (vr_parse_spill(v ? v : "auto", &r->spill, err, sizeof(err)) < 0) {
			fprintf(stderr, "vramctl: --spill: %s\n", err);
			return VR_EXIT_ERROR;
		}
		r->have_spill = 1;
		spill_note(r->spill, v);
		break;
	case OPT_WAIT: {
		/* --wait[=TIME]: the value only with '=' (a separate word is the
		 * command), as --spill's. */
		uint64_t ms;
		if (v && vr_parse_duration(v, 0, &ms, err, sizeof(err)) < 0) {
			fprintf(stderr, "vramctl: --wait: %s\n", err);
			return VR_EXIT_ERROR;
		}
		r->wait = v ? v : "60s";
		r->wait_ms = v ? ms : VR_WAIT_DEFAULT_MS;
		break;
	}
	case OPT_PARK_IDLE: {
		uint64_t ms;
		if (strcasecmp(v, "manual") != 0 &&
		    vr_parse_duration(v, 0, &ms, err, sizeof(err)) < 0) {
			fprintf(stderr, "vramctl: --park-idle: %s (or manual)\n", err);
			return VR_EXIT_ERROR;
		}
		r->park_idle = v;
		break;
	}
	case OPT_PARK_BUDGET:
		if (vr_parse_spill(v, &r->park_budget, err, sizeof(err)) < 0) {
			fprintf(stderr, "vramctl: --park-budget: %s\n", err);
			return VR_EXIT_ERROR;
		}
		r->have_park_budget = 1;
		break;
	case OPT_REPORT:
		r->ro.report = 1;
		if (v && !*v) {
			fprintf(stderr, "vramctl: --report=: no file named\n");
			return VR_EXIT_ERROR;
		}
		if (v)
			r->ro.report_path = v;
		break;
	case OPT_STACKS:
		r->ro.stacks = 1;
		break;
	case OPT_TRACE:
		r->ro.trace_path = v;
		break;
	case OPT_TRACE_MAX:
		if (vr_parse_size(v, &r->ro.trace_max, err, sizeof(err)) < 0 ||
		    r->ro.trace_max < (1u << 20)) {
			fprintf(stderr, "vramctl: --trace-max '%s': a size of at least 1M\n", v);
			return VR_EXIT_ERROR;
		}
		break;
	case 'l':
		if (cli_add_limit(&r->lim, v) < 0)
			return VR_EXIT_ERROR;
		r->have_limit = 1;
		break;
	case OPT_GUARANTEE:
		if (cli_add_spec(&r->gua, "--guarantee", v) < 0)
			return VR_EXIT_ERROR;
		r->have_guarantee = 1;
		break;
	case OPT_GROUP:
		if (vr_group_name_check(v, err, sizeof(err)) < 0) {
			fprintf(stderr, "vramctl: --group: %s\n", err);
			return VR_EXIT_ERROR;
		}
		r->group_opt = v;
		break;
	}
	return RUN_GO;
}

/*
 * --spill and --report take their value with '=' only: the next word is the
 * command. A next word that is clearly a value (a size for --spill, a
 * .json file for --report, or any word followed by "--") is refused with a
 * hint, never run. Returns 0, or -1 after a message.
 */
static int value_as_command(int c, int argc, char **argv)
{
	const char *opt = c == OPT_SPILL ? "--spill" : c == OPT_WAIT ? "--wait" : "--report";
	const char *next = optind < argc ? argv[optind] : NULL;
	char err[256];
	uint64_t size;
	size_t len;

	if (!next || next[0] == '-')
		return 0;
	len = strlen(next);
	if ((optind + 1 < argc && !strcmp(argv[optind + 1], "--")) ||
	    (c == OPT_SPILL && vr_parse_spill(next, &size, err, sizeof(err)) == 0) ||
	    (c == OPT_WAIT && vr_parse_duration(next, 0, &size, err, sizeof(err)) == 0) ||
	    (c == OPT_REPORT && len > 5 && !strcmp(next + len - 5, ".json"))) {
		fprintf(stderr,
		        "vramctl: %s takes its value with '=' (%s=%s); put '--' before the "
		        "command if '%s' is the command\n",
		        opt, opt, next, next);
		return -1;
	}
	return 0;
}

/* Reads the options up to COMMAND. RUN_GO, or the exit status (0 for --help). */
static int parse_options(int argc, char **argv, struct run_req *r)
{
	const char *word = "";
	int c, rc;

	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:l:h", run_opts, &word)) != -1) {
		if (c == ':' && optind < argc && argv[optind][0] == '-') {
			fprintf(
			    stderr,
			    "vramctl: run: option %s needs a value ('%s' is not taken as one; a "
			    "value that starts with \"--\" goes with '=': %s=%s)\n",
			    word, argv[optind], word, argv[optind]);
			return VR_EXIT_ERROR;
		}
		if (c == ':') {
			fprintf(stderr,
			        "vramctl: run: option %s needs a value ('vramctl run --help')\n",
			        word);
			return VR_EXIT_ERROR;
		}
		if (c == '?') {
			fprintf(stderr,
			        "vramctl: run: unknown option '%s' ('vramctl run --help')\n", word);
			return VR_EXIT_ERROR;
		}
		if ((c == OPT_SPILL || c == OPT_REPORT || c == OPT_WAIT) && !optarg &&
		    value_as_command(c, argc, argv) < 0)
			return VR_EXIT_ERROR;
		if ((rc = run_option(r, c, optarg)) != RUN_GO)
			return rc;
	}
	if (optind >= argc) {
		fprintf(stderr, "vramctl: run: no command given ('vramctl run --help')\n");
		return VR_EXIT_ERROR;
	}
	r->cmd = optind;
	return RUN_GO;
}

/*
 * The rules between the options, the site's default cap, and the hand-over
 * of --report/--trace runs to libexec/vramctl-run. RUN_GO, or the exit
 * status.
 */
static int settle_options(struct run_req *r, char **argv)
{
	if (cli_site_check("vramctl run") < 0)
		return VR_EXIT_ERROR;
	/* The site's default cap, unless an enclosing run or job set one. */
	if (!r->have_limit && !getenv(VR_ENV_LIMIT) && cli_site_default_spec()) {
		if (cli_add_limit(&r->lim, cli_site_default_spec()) < 0)
			return VR_EXIT_ERROR;
		r->have_limit = 1;
	}
	if (r->exec_self && !r->group_opt) {
		fprintf(stderr, "vramctl: run: --exec needs --group (a run's own group ends with "
		                "vramctl, which --exec replaces)\n");
		return VR_EXIT_ERROR;
	}
	if (r->exec_self && (r->ro.report || r->ro.trace_path)) {
		fprintf(stderr, "vramctl: run: --exec cannot be used with --report or --trace "
		                "(both are written by vramctl after the command, which --exec "
		                "replaces)\n");
		return VR_EXIT_ERROR;
	}
	if ((r->wait || r->park_idle) && !r->have_limit) {
		fprintf(stderr,
		        "vramctl: %s needs --limit: it acts on what the cap refuses or "
		        "holds\n",
		        r->wait ? "--wait" : "--park-idle");
		return VR_EXIT_ERROR;
	}
	if (r->have_park_budget && !r->park_idle) {
		fprintf(stderr, "vramctl: --park-budget goes with --park-idle\n");
		return VR_EXIT_ERROR;
	}
	if (r->park_idle && !r->have_park_budget) {
		char err[256];
		/* auto, sized now for the whole run, as --spill's. */
		if (vr_parse_spill("auto", &r->park_budget, err, sizeof(err)) < 0) {
			fprintf(stderr,
			        "vramctl: --park-idle: no host budget for parking: %s "
			        "(give --park-budget SIZE)\n",
			        err);
			return VR_EXIT_ERROR;
		}
	}
	if (r->have_spill && !r->have_limit) {
		fprintf(stderr,
		        "vramctl: --spill needs --limit: spill serves what passes the cap\n");
		return VR_EXIT_ERROR;
	}
	if (r->enforce != VR_ENFORCE_LIBRARY && (!r->have_limit || r->exec_self)) {
		fprintf(stderr,
		        "vramctl: run: --enforce %s needs --limit (the driver's limit is "
		        "the cap) and cannot go with --exec\n",
		        vr_enforce_name(r->enforce));
		return VR_EXIT_ERROR;
	}
	/* The driver alone holds the cap: the library is not in the program,
	 * and what only it does cannot be had; said, never dropped. */
	if (r->enforce == VR_ENFORCE_DRIVER) {
		const char *lib_only = r->have_spill      ? "--spill"
		                       : r->group_opt     ? "--group"
		                       : r->ro.report     ? "--report"
		                       : r->ro.trace_path ? "--trace"
		                       : r->count         ? "--count"
		                                          : NULL;
		if (lib_only) {
			fprintf(
			    stderr,
			    "vramctl: run: %s needs the injected library, which --enforce driver "
			    "leaves out of the program (the driver's limit alone holds the cap): "
			    "use --enforce both\n",
			    lib_only);
			return VR_EXIT_ERROR;
		}
	}
	if (r->ro.stacks && !r->ro.report) {
		fprintf(stderr, "vramctl: --stacks goes with --report\n");
		return VR_EXIT_ERROR;
	}
	/* --report and --trace need json-c and libdw, which the vramctl every
	 * job starts with does not load: their half lives in libexec/vramctl-run
	 * (this same command, linked with src/report), run in our place with the
	 * same arguments before anything else is done. */
	if ((r->ro.report || r->ro.trace_path) && !rep_prepare)
		return vr_exec_helper("run", argv);
	if ((r->ro.report || r->ro.trace_path) && !r->have_limit) {
		/* Recording needs the library to act: a cap of the whole device
		 * counts everything and refuses nothing the driver would grant. */
		if (cli_add_limit(&r->lim, "100%") < 0)
			return VR_EXIT_ERROR;
		r->have_limit = 1;
	}
	if (r->have_guarantee && !r->have_limit) {
		fprintf(stderr, "vramctl: --guarantee needs --limit: a guarantee is a share within "
		                "the cap (give --limit too)\n");
		return VR_EXIT_ERROR;
	}
	if (r->group_opt && !r->have_limit) {
		fprintf(stderr,
		        "vramctl: --group '%s' needs --limit: give the group's cap (its creator's "
		        "cap applies if it differs)\n",
		        r->group_opt);
		return VR_EXIT_ERROR;
	}
	return RUN_GO;
}

/*
 * The caps checked against the devices (*ndev of them in devs, -1 when not
 * looked at), lowered to the site's maximum and written as spec. 0, or -1
 * after a message.
 */
static int settle_caps(struct run_req *r, struct vr_launch_dev *devs, int *ndev, char *spec,
                       size_t len)
{
	char why[256] = "", err[512];

	/* The driver is loaded (cuInit: up to seconds on a real machine)
	 * only where the devices matter here: a DEV to check, or a named
	 * group whose caps on each device are compared with ours. A new
	 * group with plain amounts leaves the devices to the library,
	 * which fixes their caps at the program's first use. */
	int need_devices = r->group_opt != NULL || r->have_guarantee;
	for (int k = 0; k < r->lim.count; k++)
		need_devices |= r->lim.item[k].dev[0] != '\0';
	/* A site maximum is applied here, per device, so that the
	 * lowered cap is said once, by the CLI (vramctl.conf(5)). */
	const struct vr_site *site = vr_site_get();
	for (int f = 0; f < site->nfiles; f++)
		need_devices |= site->file[f].max.count > 0;
	if (need_devices)
		*ndev = cli_devices(devs, VR_MAX_DEVICES, why, sizeof(why));
	if (vr_launch_normalise(&r->lim, devs, *ndev, why, spec, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "vramctl: --limit: %s\n", err);
		return -1;
	}
	if (cli_site_clamp(&r->lim, devs, *ndev, spec, len) < 0)
		return -1;
	if (vr_launch_small_cap(&r->lim, r->count ? r->count : getenv(VR_ENV_COUNT), err,
	                        sizeof(err)))
		fprintf(stderr, "vramctl: --limit: %s\n", err);
	/* The guarantee against the caps as they will hold (after the site's
	 * maximum), then written with UUIDs as the cap is. */
	if (r->have_guarantee &&
	    (vr_launch_guarantee_check(&r->lim, &r->gua, devs, *ndev, err, sizeof(err)) < 0 ||
	     vr_launch_normalise(&r->gua, devs, *ndev, why, r->gspec, sizeof(r->gspec), err,
	                         sizeof(err)) < 0)) {
		fprintf(stderr, "vramctl: --guarantee: %s\n", err);
		return -1;
	}
	return 0;
}

/* Joins the group: --group's, or a new one named into group. 0, or -1
 * after a message. */
static int join_group(struct run_req *r, const char *spec, const struct vr_launch_dev *devs,
                      int ndev, char *group, size_t glen, struct vr_launch_group *g)
{
	char err[512];
	struct vr_launch_join j = {.group = group,
	                           .spec = spec,
	                           .limits = &r->lim,
	                           .growth = r->growth,
	                           .spill = r->spill,
	                           .park_budget = r->park_idle ? r->park_budget : 0,
	                           .fresh = !r->group_opt,
	                           .devs = devs,
	                           .ndev = ndev < 0 ? 0 : ndev};

	if (r->group_opt)
		snprintf(group, glen, "%s", r->group_opt);
	else
		unique_group(group, glen);
	/* The join gives back dead members' shares: not while NVML
	 * still lists them on a GPU (docs/fail-closed.md). */
	vr_gpu_probe_set(mon_nvml_probe());
	if (vr_launch_join(&j, g, err, sizeof(err)) < 0) {
		fprintf(stderr, "vramctl: %s\n", err);
		return -1;
	}
	fputs(g->notes, stderr);
	return 0;
}

/*
 * Writes the contract and runs COMMAND, recording it for --report/--trace,
 * or (--exec) becomes it after leaving the group (g->member is then NULL).
 * Returns the exit status.
 */
static int run_command(const struct run_req *r, int argc, char **argv, const char *lib,
                       const char *group, struct vr_launch_group *g, struct run_job *job)
{
	const char *const *cmd = (const char *const *)(argv + r->cmd);
	struct vr_contract c = {.limit = r->have_limit ? g->spec : NULL,
	                        .guarantee = r->have_guarantee ? r->gspec : NULL,
	                        .group = r->have_limit ? group : NULL,
	                        .growth = r->growth,
	                        .count = r->count,
	                        .spill = r->have_limit ? g->spill : 0,
	                        .wait = r->wait,
	                        .park_idle = r->park_idle,
	                        .park_budget = r->park_budget,
	                        .lib = lib,
	                        .cur_preload = getenv("LD_PRELOAD")};
	struct rep_run *rr = NULL;
	char err[512];

	if (vr_contract_apply(&c, cli_set_own_env, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "vramctl: %s\n", err);
		return VR_EXIT_ERROR;
	}
	if (r->exec_self) {
		/* The command takes vramctl's place (a Jupyter kernel: the process
		 * Jupyter signals is the kernel). The named group keeps its books. */
		if (g->member)
			vr_leave(g->member);
		g->member = NULL;
		return cli_exec(cmd);
	}
	if (r->ro.report || r->ro.trace_path) {
		/* A file size limit (ulimit -f) the report or trace passes makes
		 * its writes fail with EFBIG, said in one line, instead of
		 * killing vramctl with SIGXFSZ (153 for a command that exited 0).
		 * The command gets vramctl's own disposition back. */
		struct sigaction ign = {.sa_handler = SIG_IGN}, old;
		sigemptyset(&ign.sa_mask);
		sigaction(SIGXFSZ, &ign, &old);
		cli_spawn_child_xfsz(&old);
		if (!(rr = rep_prepare(&r->ro, argc - r->cmd, argv + r->cmd, g->member)))
			return VR_EXIT_ERROR;
	}

	pid_t child;
	int wstatus;
	int rc = cli_spawn_wait(cmd, &child, &wstatus);
	run_job_end(job); /* the watcher stops: its escapees are the report's */
	/* A report or trace that could not be written is said (one line); the
	 * exit status stays the command's (docs/report.md). */
	if (rr) {
		const struct cli_reaped *rp;
		int nrp = cli_spawn_reaped(&rp);
		for (int i = 0; i < nrp && rep_reaped; i++)
			rep_reaped(rr, rp[i].pid, rp[i].status);
		for (int i = 0; i < job->watch.nescapees && rep_escaped; i++)
			rep_escaped(rr, &job->watch.escapees[i]);
		rep_finish(rr, child, wstatus, rc, g->member);
	}
	return rc;
}

/* Leaves the group; a run's own group ends with it, a named group may have
 * other members, and its next fresh join resets it when none is alive. */
static void leave_group(const struct run_req *r, const char *group, struct vr_launch_group *g)
{
	if (!g->member)
		return;
	vr_leave(g->member);
	if (!r->group_opt) {
		char dir[PATH_MAX];
		int rc = vr_default_dir(dir, sizeof(dir));

		if (rc >= 0)
			rc = vr_group_remove(dir, group);

		if (rc < 0 && rc != -ENOENT)
			fprintf(stderr, "vramctl: cannot remove group '%s': %s\n", group,
			        strerror(-rc));
	}
}

int cmd_run(int argc, char **argv)
{
	struct run_req r = {.ro = {.trace_max = 1ull << 30}, .enforce = VR_ENFORCE_LIBRARY};
	struct run_drv drv;
	struct vr_launch_dev devs[VR_MAX_DEVICES];
	struct vr_launch_group g = {.member = NULL};
	char spec[4096], group[VR_GROUP_NAME_MAX + 1], lib[PATH_MAX];
	char liberr[2 * PATH_MAX + 128];
	int ndev = -1, rc;

	if ((rc = parse_options(argc, argv, &r)) != RUN_GO ||
	    (rc = settle_options(&r, argv)) != RUN_GO)
		return rc;
	/* No cap asked for, none from the site, none from an enclosing run or
	 * job: the command runs as it would without vramctl. Said once. */
	if (!r.have_limit && !getenv(VR_ENV_LIMIT))
		fprintf(stderr,
		        "vramctl: no cap in force (no --limit, no site default_limit): "
		        "'%s' runs uncapped\n",
		        argv[r.cmd]);
	/* A relative registry directory is refused before anything starts
	 * (the library would refuse every allocation: fail closed). */
	if (r.have_limit && vr_launch_registry_env(liberr, sizeof(liberr)) < 0) {
		fprintf(stderr, "vramctl: %s\n", liberr);
		return VR_EXIT_ERROR;
	}
	if (r.have_limit && settle_caps(&r, devs, &ndev, spec, sizeof(spec)) < 0)
		return VR_EXIT_ERROR;
	if (cli_find_library(lib, sizeof(lib), liberr, sizeof(liberr)) < 0) {
		fprintf(stderr, "vramctl: %s\n", liberr);
		return VR_EXIT_ERROR;
	}
	if (r.enforce & VR_ENFORCE_DRIVER) {
		char why[256] = "";
		if (ndev < 0)
			ndev = cli_devices(devs, VR_MAX_DEVICES, why, sizeof(why));
		if ((rc = run_drv_enter(&drv, &r.lim, r.have_guarantee ? &r.gua : NULL, devs,
		                        ndev)) != 0)
			return rc;
		/* The driver alone: the library is not given the cap. */
		r.have_limit = r.enforce != VR_ENFORCE_DRIVER;
	}
	/* The guarantee is given (or refused) before the command starts,
	 * and held by this launcher's lines while it runs. */
	struct cli_admit adm = {.n = 0};
	static struct run_job job;
	if (r.have_limit && join_group(&r, spec, devs, ndev, group, sizeof(group), &g) < 0) {
		rc = VR_EXIT_ERROR;
	} else if (r.have_limit && r.have_guarantee &&
	           cli_admit(&r.gua, &r.lim, devs, ndev, group, g.member, r.wait_ms, &adm) < 0) {
		rc = VR_EXIT_ERROR;
	} else {
		/* The run is a job: found by its processes without their
		 * environment, watched for those that leave the cap. */
		run_job_begin(&job, g.member, NULL, group, g.spec, &r.lim,
		              r.count ? r.count : getenv(VR_ENV_COUNT), devs, ndev,
		              (r.enforce & VR_ENFORCE_DRIVER) ? drv.dir : NULL, r.exec_self);
		rc = run_command(&r, argc, argv, lib, group, &g, &job);
	}
	run_job_end(&job);
	cli_admit_release(&adm);
	leave_group(&r, group, &g);
	if (r.enforce & VR_ENFORCE_DRIVER)
		run_drv_leave(&drv);
	return rc;
}
