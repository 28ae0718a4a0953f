/*
 * jobs.h - a capped Slurm job on a node as a job the library finds without
 * the environment (jobs.c; registry/jobs.h): its records, the cap a step
 * started without the job's option takes from them, and the watcher of its
 * processes outside the cap (`vramctl watch`).
 *
 *   records  per step, the tree of its slurmstepd (every task is below it);
 *            and the job's cgroup where the task is in one (task/cgroup:
 *            ".../job_<id>"), so that a process pam_slurm_adopt moves into
 *            the job over ssh is in it. Published as root by each task
 *            before it drops its privileges; the step's tree record goes
 *            with its slurmstepd (slurm_spank_exit), every record of the
 *            job with the job's epilog.
 *   a step without the option (srun --export=NONE inside a capped batch
 *            job drops it) takes the job's cap on this node from its
 *            records: the job's cap reaches every step.
 *   watcher  the first task of each capped step on a node starts `vramctl
 *            watch` for the step's tree (detached: it ends with the step's
 *            slurmstepd), writing to the task's standard error.
 */
#ifndef VRAMCTL_SLURM_JOBS_H
#define VRAMCTL_SLURM_JOBS_H

#include <stddef.h>
#include <sys/types.h>

/* Publishes the step's records for the group (dir, group, uid: the job's
 * books), capped at spec. Root only. 0, or -1 with a line in err. */
int vr_slurm_jobs_publish(const char *dir, const char *group, uid_t uid, const char *spec,
                          char *err, size_t errlen);

/* The job's cap on this node from its records, into spec: 1, or 0 when the
 * job has none here. */
int vr_slurm_jobs_cap(const char *dir, const char *group, char *spec, size_t len);

/* At slurmstepd's end: its step's tree record goes. */
void vr_slurm_jobs_step_end(void);

/* The job ends on the node: every record of its group goes. Returns how
 * many. */
int vr_slurm_jobs_withdraw(const char *dir, const char *group);

/*
 * Starts `vramctl watch` (the program at vramctl) for the step this task
 * belongs to (the tree of its parent, slurmstepd), detached, its standard
 * error the task's, with env as its environment. 0, or -1 with a line in
 * err (nothing started).
 */
int vr_slurm_watch(const char *vramctl, const char *dir, const char *group, const char *spec,
                   char *const env[], char *err, size_t errlen);

/* The job's cgroup (v2) of a process's cgroup path: the path up to its
 * "job_<digits>" component, into out. 0, or -1 when there is none. */
int vr_slurm_job_cgroup(const char *path, char *out, size_t len);

#endif /* VRAMCTL_SLURM_JOBS_H */
