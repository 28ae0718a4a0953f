/*
 * run_job.c - `vramctl run` as a job: its records, its cgroup, the
 * subreaper and the watcher of escapees (run_job.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run_job.h"
#include "common/cgroup2.h"
#include "registry/proc.h"

/* ---- the records */

static void fill(struct vr_job *rec, int kind, const char *dir, const char *group, const char *spec,
                 const char *count)
{
	memset(rec, 0, sizeof *rec);
	rec->kind = kind;
	rec->uid = (uint32_t)geteuid();
	snprintf(rec->dir, sizeof rec->dir, "%s", dir);
	snprintf(rec->group, sizeof rec->group, "%s", group);
	snprintf(rec->limit, sizeof rec->limit, "%s", spec);
	snprintf(rec->count, sizeof rec->count, "%s", count ? count : "");
}

/* Publishes rec into path ("" when it is not); an unfit jobs directory is
 * said once (a missing one only to root, who could make it: a user's run
 * without it still has its watcher). 0 or -1. */
static int publish(struct vr_job *rec, char *path, size_t len)
{
	static int said;
	char err[512];
	int rc = vr_jobs_prepare(NULL, err, sizeof err);
	if (rc == 0)
		rc = vr_job_publish(NULL, rec, path, len, err, sizeof err);
	if (rc == 0)
		return 0;
	path[0] = '\0';
	if (!said++ && (rc != -ENOENT || geteuid() == 0))
		fprintf(stderr,
		        "vramctl: cannot record this run as a job (%s): a process of it that "
		        "clears its environment is counted against the cap, not held by it\n",
		        err);
	return -1;
}

/* A cgroup of the run's own, where vramctl may make one: vramctl moves in,
 * so the command is born there, and a process moved in from outside (an ssh
 * session adopted as pam_slurm_adopt does) is in the job. */
static void make_cgroup(struct run_job *j)
{
	const char *root = vr_cgroup2_hierarchy();
	char own[VR_CGROUP2_LEN];
	if (!root || vr_cgroup2_of(0, own, sizeof own) != 0)
		return;
	if (!strcmp(own, "/"))
		own[0] = '\0';
	snprintf(j->home, sizeof j->home, "%s%s", root, own);
	snprintf(j->cg_dir, sizeof j->cg_dir, "%s%s/vramctl-job-%d", root, own, (int)getpid());
	if (mkdir(j->cg_dir, 0755) != 0) {
		j->cg_dir[0] = '\0';
		return;
	}
	if (vr_cgroup2_move(j->cg_dir, 0) != 0) {
		rmdir(j->cg_dir);
		j->cg_dir[0] = '\0';
	}
}

/* The cgroup this process is in now, recorded as the job's. */
static void record_cgroup(struct run_job *j, const char *dir, const char *group, const char *spec,
                          const char *count)
{
	char path[VR_CGROUP2_LEN];
	const char *root = vr_cgroup2_hierarchy();
	if (!root || vr_cgroup2_of(0, path, sizeof path) != 0 || !strcmp(path, "/"))
		return;
	snprintf(j->cg_full, sizeof j->cg_full, "%s%s", root, path);
	fill(&j->cg, VR_JOB_CGROUP, dir, group, spec, count);
	snprintf(j->cg.hier, sizeof j->cg.hier, "v2");
	snprintf(j->cg.cgroup, sizeof j->cg.cgroup, "%s", path);
	j->cg.watcher = j->tree.watcher;
	publish(&j->cg, j->cg_path, sizeof j->cg_path);
}

void run_job_begin(struct run_job *j, vr_member *member, const char *dir, const char *group,
                   const char *spec, const struct vr_limits *lim, const char *count,
                   const struct vr_launch_dev *devs, int ndev, const char *drv_cgroup,
                   int exec_self)
{
	char dirbuf[PATH_MAX];
	memset(j, 0, sizeof *j);
	if (!member || vr_dir_or_default(&dir, dirbuf, sizeof dirbuf) != 0)
		return;
	/* With --exec the command is this process: the tree's root. */
	fill(&j->tree, VR_JOB_TREE, dir, group, spec, count);
	j->tree.root_pid = (int32_t)getpid();
	if (vr_proc_start_time(NULL, 0, &j->tree.root_start) != 0)
		j->tree.kind = 0;
	if (!exec_self) {
		j->tree.watcher = (int32_t)getpid();
		/* Orphaned descendants come back to vramctl: they stay in the
		 * tree while the run lasts (spawn.c reaps them). */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	}
	if (j->tree.kind)
		publish(&j->tree, j->tree_path, sizeof j->tree_path);
	if (!drv_cgroup && !exec_self)
		make_cgroup(j);
	if (drv_cgroup || j->cg_dir[0])
		record_cgroup(j, dir, group, spec, count);
	if (exec_self)
		return;
	struct cli_watch *w = &j->watch;
	w->member = member;
	w->lim = lim;
	w->devs = devs;
	w->ndev = ndev < 0 ? 0 : ndev;
	w->group = group;
	w->tree = j->tree;
	w->cg = j->cg;
	(void)cli_watch_start(w); /* without NVML nothing on a GPU is seen: none */
}

/* Has the cgroup directory a process other than this one? */
static int others_in(const char *dir)
{
	char path[PATH_MAX + 16], text[4096];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	for (char *p = text; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid != getpid())
			return 1;
		p = end + (*end == '\n');
	}
	return n >= (ssize_t)sizeof text - 1;
}

void run_job_end(struct run_job *j)
{
	cli_watch_stop(&j->watch);
	if (j->tree_path[0])
		vr_job_withdraw(j->tree_path);
	j->tree_path[0] = '\0';
	/* Processes of the run still in its cgroup keep the cgroup and its
	 * record: they are still in the job. */
	if (j->cg_full[0] && others_in(j->cg_full))
		return;
	if (j->cg_path[0])
		vr_job_withdraw(j->cg_path);
	j->cg_path[0] = '\0';
	if (j->cg_dir[0] && vr_cgroup2_move(j->home, 0) == 0)
		rmdir(j->cg_dir);
	j->cg_dir[0] = '\0';
}
