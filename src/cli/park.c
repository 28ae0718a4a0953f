/*
 * park.c - `vramctl park TARGET` and `vramctl unpark TARGET`: a
 * process that runs with --park-idle, or every such member of a group, is
 * parked now (its GPU memory moved to host memory by the driver's
 * checkpoint API, until its next driver call) or brought back. TARGET is a
 * PID (as the host sees it) or a group's name in the registry directory.
 *
 * The process does it itself (hook/park.c): this command only asks it, on
 * the socket it listens on (common/parkwire.h), which tells it who asks;
 * its own user and root may. A process is parked only once its driver
 * calls have stopped for a second (a busy one would come back at once).
 * Exit status: 0 when every process asked did it, 1 when one refused or
 * cannot be parked, 125 for a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/contract.h"
#include "common/exit.h"
#include "common/parkwire.h"
#include "common/size.h"
#include "common/text.h"
#include "registry/registry.h"
#include "vramctl/registry.h"

/* How long a park may take: the driver moves gigabytes to host memory. */
#define PARK_TIMEOUT_MS 150000

static void park_usage(FILE *f, const char *cmd)
{
	int park = !strcmp(cmd, "park");
	fprintf(f,
	        "usage: vramctl %s [--registry DIR] PID|GROUP\n"
	        "\n"
	        "%s\n"
	        "PID: a process as the host numbers it; GROUP: every member of the group.\n"
	        "Only processes run with --park-idle (or VRAMCTL_PARK_IDLE) can be parked.\n"
	        "\n"
	        "  --registry DIR  where the group's books are (default: yours; also\n"
	        "                  --registry-dir)\n"
	        "  -h, --help      this help\n",
	        cmd,
	        park ? "Parks processes now: their GPU memory moves to host memory (the driver's\n"
	               "checkpoint API) and their group's card figure drops; each comes back\n"
	               "at its next driver call. A process is parked once its driver calls have\n"
	               "stopped for a second."
	             : "Brings parked processes back on the GPU now, instead of at their next\n"
	               "driver call (their group must have room for them).");
}

/* Asks one process; says what came of it. 0 done, 1 refused or not
 * parkable. */
static int ask_one(const char *cmd, int pid, const char *label)
{
	char reply[VR_PARK_LINE], a[32];
	int park = !strcmp(cmd, "park");
	int rc = vr_park_ask(pid, park ? "park" : "unpark", reply, sizeof reply, PARK_TIMEOUT_MS);
	if (rc == -ECONNREFUSED) {
		printf("pid %d%s: cannot be %s: it does not run with --park-idle (nothing listens "
		       "for it), or it is gone\n",
		       pid, label, park ? "parked" : "unparked");
		return 1;
	}
	if (rc != 0) {
		printf("pid %d%s: no answer: %s\n", pid, label, strerror(-rc));
		return 1;
	}
	unsigned long long b;
	if (sscanf(reply, "parked %llu", &b) == 1) {
		printf("pid %d%s: parked, %s moved to host memory\n", pid, label,
		       vr_format_size(b, a, sizeof a));
		return 0;
	}
	if (!strcmp(reply, "restored")) {
		printf("pid %d%s: back on the GPU\n", pid, label);
		return 0;
	}
	char shown[4 * VR_PARK_LINE];
	vr_text_escape(shown, sizeof shown,
	               !strncmp(reply, "refused ", 8) ? reply + 8 : reply); /* its words */
	printf("pid %d%s: not %s: %s\n", pid, label, park ? "parked" : "unparked", shown);
	return 1;
}

/* Every live member of group in dir (launchers aside). */
static int ask_group(const char *cmd, const char *dir, const char *group)
{
	struct vramctl_snapshot *s = NULL;
	int rc = vramctl_snapshot_take(dir, &s);
	if (rc < 0) {
		fprintf(stderr, "vramctl: %s: cannot read the registry: %s\n", cmd, strerror(-rc));
		return VR_EXIT_ERROR;
	}
	int found = 0, bad = 0, asked = 0;
	for (int i = 0; i < s->ngroups; i++)
		found |= !strcmp(s->groups[i].name, group);
	for (int i = 0; i < s->nprocs; i++) {
		const struct vramctl_proc *p = &s->procs[i];
		if (strcmp(p->group, group) != 0 || p->state != VRAMCTL_PROC_ALIVE || p->launcher)
			continue;
		int pid = p->host_pid > 0 ? p->host_pid : p->outer_pid;
		char label[160], name[4 * 64];
		vr_text_escape(name, sizeof name, p->command);
		snprintf(label, sizeof label, " (%.100s)", name);
		if (!p->parkable) {
			printf("pid %d%s: cannot be %s: it runs without --park-idle\n", pid, label,
			       strcmp(cmd, "park") ? "unparked" : "parked");
			bad = 1;
			continue;
		}
		/* Nothing to do for one parked already (park) or running (unpark). */
		int parking = !strcmp(cmd, "park");
		if (parking == !!p->parked)
			continue;
		asked++;
		bad |= ask_one(cmd, pid, label);
	}
	vramctl_snapshot_free(s);
	if (!found) {
		fprintf(stderr, "vramctl: %s: no group '%s' in the registry\n", cmd, group);
		return VR_EXIT_ERROR;
	}
	if (!asked && !bad)
		printf("group %s: no member to %s\n", group, cmd);
	return bad;
}

static int park_cmd(int argc, char **argv)
{
	const char *cmd = argv[0], *dir = NULL, *word = "";
	static const struct option opts[] = {{"registry", required_argument, NULL, 'r'},
	                                     {"registry-dir", required_argument, NULL, 'r'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	int c;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:h", opts, &word)) != -1) {
		if (c == 'h') {
			park_usage(stdout, cmd);
			return 0;
		}
		if (c == 'r')
			dir = optarg;
		else
			return cli_option_error(cmd, c, word);
	}
	if (optind != argc - 1)
		return cli_usage_error(cmd, "give one PID or group");
	const char *t = argv[optind];
	char *end;
	long pid = strtol(t, &end, 10);
	if (*t >= '0' && *t <= '9' && !*end) {
		if (pid <= 0 || pid > 0x3fffffff)
			return cli_usage_error(cmd, "bad PID '%s'", t);
		return ask_one(cmd, (int)pid, "");
	}
	char err[256];
	if (vr_group_name_check(t, err, sizeof err) < 0)
		return cli_usage_error(cmd, "'%s' is neither a PID nor a group: %s", t, err);
	return ask_group(cmd, dir, t);
}

int cmd_park(int argc, char **argv)
{
	return park_cmd(argc, argv);
}

int cmd_unpark(int argc, char **argv)
{
	return park_cmd(argc, argv);
}
