/*
 * jobs.c - a capped Slurm job's records, its cap for steps without the
 * option, and its watcher (jobs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cgroup2.h"
#include "common/text.h"
#include "registry/jobs.h"
#include "registry/proc.h"
#include "slurm/jobs.h"

int vr_slurm_job_cgroup(const char *path, char *out, size_t len)
{
	const char *p = path;
	while ((p = strstr(p, "/job_")) != NULL) {
		const char *d = p + 5, *e = d;
		while (*e >= '0' && *e <= '9')
			e++;
		if (e > d && (*e == '/' || !*e)) {
			int n = snprintf(out, len, "%.*s", (int)(e - path), path);
			return n > 0 && (size_t)n < len ? 0 : -1;
		}
		p = d;
	}
	return -1;
}

static void fill(struct vr_job *j, int kind, const char *dir, const char *group, uid_t uid,
                 const char *spec)
{
	memset(j, 0, sizeof *j);
	j->kind = kind;
	j->uid = (uint32_t)uid;
	snprintf(j->dir, sizeof j->dir, "%s", dir);
	snprintf(j->group, sizeof j->group, "%s", group);
	snprintf(j->limit, sizeof j->limit, "%s", spec);
}

int vr_slurm_jobs_publish(const char *dir, const char *group, uid_t uid, const char *spec,
                          char *err, size_t errlen)
{
	struct vr_job j;
	char path[VR_JOB_TEXT + 64], cg[VR_CGROUP2_LEN], job_cg[VR_CGROUP2_LEN];
	int rc = vr_jobs_prepare(NULL, err, errlen);
	if (rc < 0)
		return -1;
	/* The task's parent: its step's slurmstepd. */
	fill(&j, VR_JOB_TREE, dir, group, uid, spec);
	j.root_pid = (int32_t)getppid();
	if (vr_proc_start_time(NULL, j.root_pid, &j.root_start) != 0 ||
	    vr_job_publish(NULL, &j, path, sizeof path, err, errlen) != 0)
		return -1;
	/* The job's cgroup, where Slurm keeps the job in one. */
	if (vr_cgroup2_of(0, cg, sizeof cg) == 0 &&
	    vr_slurm_job_cgroup(cg, job_cg, sizeof job_cg) == 0) {
		fill(&j, VR_JOB_CGROUP, dir, group, uid, spec);
		snprintf(j.hier, sizeof j.hier, "v2");
		snprintf(j.cgroup, sizeof j.cgroup, "%s", job_cg);
		if (vr_job_publish(NULL, &j, path, sizeof path, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int vr_slurm_jobs_cap(const char *dir, const char *group, char *spec, size_t len)
{
	struct vr_job j;
	if (!vr_jobs_of_group(NULL, dir, group, &j))
		return 0;
	return vr_text_copy(spec, len, j.limit) == 0;
}

void vr_slurm_jobs_step_end(void)
{
	struct vr_job j;
	char name[96], path[VR_JOB_TEXT + 128];
	memset(&j, 0, sizeof j);
	j.kind = VR_JOB_TREE;
	j.root_pid = (int32_t)getpid();
	if (vr_proc_start_time(NULL, 0, &j.root_start) != 0 ||
	    vr_job_name(&j, name, sizeof name) != 0)
		return;
	snprintf(path, sizeof path, "%s/%s", vr_jobs_dir(NULL), name);
	(void)vr_job_withdraw(path);
}

int vr_slurm_jobs_withdraw(const char *dir, const char *group)
{
	return vr_jobs_withdraw_group(NULL, dir, group);
}

int vr_slurm_watch(const char *vramctl, const char *dir, const char *group, const char *spec,
                   char *const env[], char *err, size_t errlen)
{
	char tree[64];
	uint64_t start;
	pid_t stepd = getppid();
	if (access(vramctl, X_OK) != 0) {
		vr_seterr(err, errlen, "%s: %s", vramctl, strerror(errno));
		return -1;
	}
	if (vr_proc_start_time(NULL, stepd, &start) != 0) {
		vr_seterr(err, errlen, "the step's slurmstepd cannot be read in /proc");
		return -1;
	}
	snprintf(tree, sizeof tree, "%d:%llu", (int)stepd, (unsigned long long)start);
	char w_watch[] = "watch", w_group[] = "--group", w_limit[] = "--limit",
	     w_dir[] = "--registry-dir", w_tasks[] = "--tasks";
	char *const argv[] = {(char *)vramctl, w_watch,      w_group, (char *)group,
	                      w_limit,         (char *)spec, w_dir,   (char *)dir,
	                      w_tasks,         tree,         NULL};
	/* Everything the child needs is ready: between fork and exec it only
	 * makes system calls. Detached (a double fork), so that the task's
	 * program never has a child it did not start. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t c = fork();
	if (c == 0) {
		if (fork() != 0)
			_exit(0);
		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		/* Nothing of slurmstepd's but standard error: a pipe end kept
		 * open would keep the step waiting for its end. */
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
		execve(vramctl, argv, env);
		_exit(127);
	}
	if (null >= 0)
		close(null);
	if (c < 0) {
		vr_seterr(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}
