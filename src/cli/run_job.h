/*
 * run_job.h - `vramctl run` as a job (run_job.c; docs/architecture.md,
 * "Jobs"): a process of the run that loses its environment (env -i, sudo,
 * a cleared LD_PRELOAD) does not leave the run's cap.
 *
 *   the record   the run's process tree (vramctl's PID and start time) and,
 *                where vramctl may make one (root, a delegated subtree), a
 *                cgroup of its own the command is born in, published in the
 *                jobs directory (registry/jobs.h) with the group's books: the
 *                library finds them without the environment;
 *   the reaper   vramctl is the subreaper of its tree, so double-forked
 *                daemons stay in it while the run lasts;
 *   the watcher  a thread that charges the job's processes outside the cap
 *                to its group and says each once (escapees.h).
 */
#ifndef VRAMCTL_CLI_RUN_JOB_H
#define VRAMCTL_CLI_RUN_JOB_H

#include <limits.h>

#include "cli/escapees.h"
#include "common/size.h"
#include "launch/launch.h"
#include "registry/jobs.h"
#include "registry/registry.h"

struct run_job {
	struct vr_job tree, cg;           /* what was published (kind 0: nothing) */
	char tree_path[VR_JOB_TEXT + 64]; /* the records ("": none) */
	char cg_path[VR_JOB_TEXT + 64];
	char cg_dir[PATH_MAX];  /* the run's own cgroup ("": none, or --enforce's) */
	char cg_full[PATH_MAX]; /* the recorded cgroup's directory (own or --enforce's) */
	char home[PATH_MAX];    /* the cgroup vramctl came from */
	struct cli_watch watch; /* its escapees stay readable after run_job_end */
};

/*
 * Before the command starts: publishes the job's records (said once, at
 * VRAMCTL_LOG-independent warn level, when the jobs directory is missing or
 * unfit: the cap then still holds for every process that keeps its
 * environment), makes vramctl the subreaper of its tree (not with exec_self:
 * the command would inherit it), moves vramctl into a cgroup of its own
 * when it may (drv_cgroup: --enforce's, used instead) and starts the
 * watcher (not with exec_self). member, lim, devs (ndev, -1: not looked at)
 * and group must outlive the job. Never fails the run.
 */
void run_job_begin(struct run_job *j, vr_member *member, const char *dir, const char *group,
                   const char *spec, const struct vr_limits *lim, const char *count,
                   const struct vr_launch_dev *devs, int ndev, const char *drv_cgroup,
                   int exec_self);

/* After the command: stops the watcher, withdraws the records (a cgroup
 * record and the cgroup stay while processes of the run are in it: they
 * are still in the job). Its escapees stay readable. */
void run_job_end(struct run_job *j);

#endif /* VRAMCTL_CLI_RUN_JOB_H */
