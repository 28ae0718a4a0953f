/*
 * watch.c - `vramctl watch --group NAME --limit SPEC (--tree PID[:START] |
 * --cgroup PATH)... [--registry-dir DIR]`: counts a capped job's processes
 * that run outside its cap against its group, and says each once on
 * stderr (escapees.h), for a launcher that is not `vramctl run` itself
 * (which watches its own tree): the Slurm plugin starts one per capped
 * step and node. It holds the group open as a launcher (not a member) and
 * ends when the tree's root ends (with --tree), or at SIGTERM/SIGINT.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/escapees.h"
#include "cli/options.h"
#include "common/exit.h"
#include "registry/proc.h"

static void watch_usage(FILE *f)
{
	fprintf(f, "usage: vramctl watch --group NAME --limit SPEC [--registry-dir DIR]\n"
	           "                     (--tree|--tasks PID[:START] | --cgroup PATH)...\n"
	           "\n"
	           "Counts the processes of a capped job that run outside its cap (the\n"
	           "library not loaded in them) against the job's group, so that its\n"
	           "members are refused past the cap, and says each once on stderr.\n"
	           "Launchers start it (the Slurm plugin, one per capped step and node);\n"
	           "vramctl run watches its own processes.\n"
	           "\n"
	           "  --group NAME        the job's group\n"
	           "  --limit SPEC        the group's cap (for a GPU it has not used yet)\n"
	           "  --registry-dir DIR  where the group's books are (default: yours)\n"
	           "  --tree PID[:START]  the job is this process and all below it; watch\n"
	           "                      ends when it does (START: its start time, field 22\n"
	           "                      of /proc/PID/stat)\n"
	           "  --tasks PID[:START] the job is the children of this process (a Slurm\n"
	           "                      step's slurmstepd) and all below them; watch ends\n"
	           "                      when it has none left\n"
	           "  --cgroup PATH       the job is this cgroup v2 and all below it\n"
	           "  -h, --help          this help\n"
	           "\n"
	           "Exit status: 0 when the job ended or at SIGTERM, 125 vramctl's error.\n");
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* --tree PID[:START] into j. 0 or -1. */
static int parse_tree(const char *v, struct vr_job *j)
{
	char *end;
	long pid = strtol(v, &end, 10);
	if (end == v || pid <= 0 || (*end && *end != ':'))
		return -1;
	j->kind = VR_JOB_TREE;
	j->root_pid = (int32_t)pid;
	if (*end == ':') {
		char *e2;
		j->root_start = strtoull(end + 1, &e2, 10);
		return e2 == end + 1 || *e2 ? -1 : 0;
	}
	return vr_proc_start_time(NULL, (pid_t)pid, &j->root_start) == 0 ? 0 : -1;
}

/* Is the tree's root still the process it was (with tasks: and has it a
 * child still, in any of its threads)? */
static int root_alive(const struct vr_job *j, int tasks)
{
	uint64_t now;
	if (vr_proc_start_time(NULL, j->root_pid, &now) != 0 || now != j->root_start)
		return 0;
	if (!tasks)
		return 1;
	char path[320];
	snprintf(path, sizeof path, "/proc/%d/task", (int)j->root_pid);
	DIR *d = opendir(path);
	struct dirent *e;
	int any = 0;
	while (d && !any && (e = readdir(d)) != NULL) {
		char kids[64];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "task/%s/children", e->d_name);
		any = vr_proc_read(NULL, j->root_pid, path, kids, sizeof kids) > 0;
	}
	if (d)
		closedir(d);
	return any || !d;
}

int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"group", required_argument, NULL, 'g'},
	    {"limit", required_argument, NULL, 'l'},
	    {"registry-dir", required_argument, NULL, 'd'},
	    {"tree", required_argument, NULL, 't'},
	    {"tasks", required_argument, NULL, 'T'},
	    {"cgroup", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct cli_watch w;
	struct vr_limits lim;
	const char *group = NULL, *dir = NULL, *spec = NULL, *word = "";
	int c, tasks = 0;
	memset(&lim, 0, sizeof lim);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:h", opts, &word)) != -1) {
		switch (c) {
		case 'h':
			watch_usage(stdout);
			return 0;
		case 'g':
			group = optarg;
			break;
		case 'l':
			spec = optarg;
			if (cli_add_limit(&lim, optarg) < 0)
				return VR_EXIT_ERROR;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'T':
			tasks = 1;
			/* fall through */
		case 't':
			if (parse_tree(optarg, &w.tree) < 0)
				return cli_usage_error(
				    "watch", "--tree %s: PID[:START] of a live process", optarg);
			break;
		case 'c':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof w.cg.cgroup)
				return cli_usage_error("watch", "--cgroup %s: a cgroup v2 path",
				                       optarg);
			w.cg.kind = VR_JOB_CGROUP;
			snprintf(w.cg.hier, sizeof w.cg.hier, "v2");
			snprintf(w.cg.cgroup, sizeof w.cg.cgroup, "%s", optarg);
			break;
		default:
			return cli_option_error("watch", c, word);
		}
	}
	if (optind < argc)
		return cli_usage_error("watch", "unexpected argument '%s'", argv[optind]);
	if (!group || !spec || (!w.tree.kind && !w.cg.kind))
		return cli_usage_error("watch",
		                       "--group, --limit and --tree or --cgroup are needed");
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = spec, .launcher = 1};
	char err[512];
	int rc = vr_join(&o, &w.member, NULL, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "vramctl: watch: cannot join group '%s': %s\n", group, err);
		return VR_EXIT_ERROR;
	}
	w.lim = &lim;
	w.group = group;
	if (cli_watch_open(&w) != 0) {
		fprintf(stderr, "vramctl: watch: NVML cannot be loaded: nothing on a GPU can be "
		                "seen\n");
		vr_leave(w.member);
		return VR_EXIT_ERROR;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop && (!w.tree.kind || root_alive(&w.tree, tasks))) {
		cli_watch_look(&w);
		poll(NULL, 0, CLI_WATCH_MS);
	}
	cli_watch_stop(&w);
	vr_leave(w.member);
	return 0;
}
