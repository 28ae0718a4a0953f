/*
 * escapees.h - the watcher of a capped job's processes that run outside
 * its cap (escapees.c): `vramctl run`'s thread (run_job.h) and `vramctl
 * watch`, which the Slurm plugin starts on each node of a capped step.
 *
 * Every half second it lists the processes NVML sees on each GPU. One that
 * is the job's (its tree or its cgroup: registry/jobs.h, vr_job_holds) but
 * not a member of the job's group is an escapee: the library is not loaded
 * in it (a static binary, LD_PRELOAD removed without the machine's
 * preload) or it could not join. What the card holds for the escapees of
 * a GPU is charged to the group (the watcher's launcher slot's overhead:
 * registry.h, vr_overhead_set), so the members are refused past the cap,
 * and given back as they go; each escapee is said once on stderr (PID,
 * command, bytes, GPU, why).
 */
#ifndef VRAMCTL_CLI_ESCAPEES_H
#define VRAMCTL_CLI_ESCAPEES_H

#include <pthread.h>
#include <stdint.h>

#include "common/size.h"
#include "launch/launch.h"
#include "registry/jobs.h"
#include "registry/registry.h"
#include "report/report.h"

struct mon_nvml;

struct cli_watch {
	/* Given by the caller, kept for the watcher's life. */
	vr_member *member;                /* a launcher's membership of the job's group */
	const struct vr_limits *lim;      /* the group's caps, for a GPU it adds */
	const struct vr_launch_dev *devs; /* the run's devices (numbering); may be NULL */
	int ndev;
	const char *group;
	struct vr_job tree, cg; /* the job's identities (kind 0: none) */
	/* The watcher's own. */
	struct mon_nvml *nv;
	pthread_t thread;
	int running;
	int wake[2]; /* a pipe: written to stop the thread */
	struct {
		unsigned char uuid[VR_UUID_LEN];
		uint64_t bytes;
	} charged[VR_MAX_DEVICES]; /* what the group is charged now, per GPU */
	int ncharged;
	/* Processes with the library loaded, not members yet: a capped
	 * process is on the GPU (its context) before it joins its group, so
	 * such a one is an escapee only when it still is not one a while
	 * later (CLI_WATCH_GRACE_MS). */
	struct {
		int32_t pid;
		uint64_t start, since_ns;
	} pending[64];
	int npending;
	pthread_mutex_t lock; /* escapees[] between the thread and the caller */
	int nescapees;
	struct rep_escapee escapees[REP_ESCAPED_MAX];
};

/* Opens NVML for w (its fields above set). 0, or -1 with NVML not found
 * (nothing on a GPU can be seen either: there is nothing to watch). */
int cli_watch_open(struct cli_watch *w);

/* One look (the thread's loop, or a caller's own). */
void cli_watch_look(struct cli_watch *w);

/* A thread that looks every half second until cli_watch_stop. 0 or -1. */
int cli_watch_start(struct cli_watch *w);

/* Stops the thread (if any) and closes NVML; the escapees stay readable. */
void cli_watch_stop(struct cli_watch *w);

/* How often the watcher looks (an escapee without the library is charged
 * within twice it; one with the library loaded, which may be joining its
 * group, within CLI_WATCH_GRACE_MS more). */
#define CLI_WATCH_MS       500
#define CLI_WATCH_GRACE_MS 1000

#endif /* VRAMCTL_CLI_ESCAPEES_H */
