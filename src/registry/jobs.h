/*
 * jobs.h - job records: how a process of a capped job finds its job's cap
 * without its environment (docs/architecture.md, "Jobs").
 *
 * Whoever starts a capped job (`vramctl run`, the Slurm plugin) publishes a
 * record in the machine's jobs directory (VR_JOBS_DIR): the job's identity,
 * which a process can match from /proc alone, and the group that keeps its
 * books. Two identities:
 *
 *   tree    a process (PID + start time): the job is that process and every
 *           process below it (`vramctl run` is the subreaper of its tree,
 *           so double-forked daemons stay below it). File
 *           tree-<pid>-<start>.job.
 *   cgroup  a cgroup (v2, or one v1 hierarchy) and every cgroup below it: a
 *           process moved in from outside (pam_slurm_adopt's ssh session)
 *           is in the job. File cg-<hash of hierarchy and path>.job.
 *
 * A record is text, "key value" lines, written whole under a temporary name
 * and renamed into place. Nothing in it is believed without proof from the
 * kernel: a tree record only when its file is root's or its owner is the
 * uid that runs the root process, a cgroup record only when its file is
 * root's or its owner owns the cgroup's directory (a delegated subtree).
 * So a user can describe only jobs made of their own processes (and of what
 * those start), never put another user's processes under a cap.
 *
 * libc only: the injected library reads records at its first driver call.
 * Nothing here prints; errors are negative errno values with a line in err.
 */
#ifndef VRAMCTL_REGISTRY_JOBS_H
#define VRAMCTL_REGISTRY_JOBS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract.h"

/* The machine's jobs directory: root's, mode 1777 (each user may add and
 * remove their own records, and only those). */
#define VR_JOBS_DIR     "/run/vramctl/jobs"
#define VR_JOB_TEXT     512  /* a directory, a cgroup path */
#define VR_JOB_SPEC     4096 /* a cap spec, as launchers write it */
#define VR_JOBS_MAX     4    /* jobs a process is found in (nesting) */
#define VR_JOB_FILE_MAX 8192

enum vr_job_kind { VR_JOB_TREE = 1, VR_JOB_CGROUP = 2 };

struct vr_job {
	int kind;
	/* VR_JOB_TREE: the root process, as this PID namespace sees it. */
	int32_t root_pid;
	uint64_t root_start; /* /proc/PID/stat field 22 */
	/* VR_JOB_CGROUP: the hierarchy ("v2", or a v1 line's controllers,
	 * "freezer") and the cgroup's path in it ("/slurm/uid_1/job_12"). */
	char hier[64];
	char cgroup[VR_JOB_TEXT];
	/* The group whose books hold the job: its owner, directory, name. */
	uint32_t uid;
	char dir[VR_JOB_TEXT];
	char group[VR_GROUP_NAME_MAX + 1];
	char limit[VR_JOB_SPEC];     /* the group's cap spec (VRAMCTL_LIMIT's grammar) */
	char count[16];              /* "card", "allocations" or "" (the default) */
	int32_t watcher;             /* the process that charges escapees (0: none) */
	char path[VR_JOB_TEXT + 64]; /* where it was found (vr_jobs_of) */
};

/* The jobs directory in force: dir when not NULL, else VR_JOBS_DIR. */
const char *vr_jobs_dir(const char *dir);

/*
 * Makes the jobs directory (root: VR_JOBS_DIR's parent 0755, the directory
 * 1777, both root's) when it is missing. Returns 0 (it exists and is fit:
 * root's, sticky, not a symlink), or a negative errno with a line in err
 * (-EPERM: it is another user's, or not sticky; -EACCES: cannot make it).
 */
int vr_jobs_prepare(const char *dir, char *err, size_t errlen);

/* 0 when the jobs directory is fit for records (as vr_jobs_prepare checks,
 * without making anything), or a negative errno with a line in err. */
int vr_jobs_check(const char *dir, char *err, size_t errlen);

/*
 * Publishes j (its kind's identity, uid, dir, group and limit set; fields
 * must hold no newline) as a record in the jobs directory, replacing one of
 * the same name. Stale records the caller may remove (their root process is
 * gone, their cgroup is gone) are removed on the way. The record's path
 * goes into path. Returns 0 or a negative errno with a line in err.
 */
int vr_job_publish(const char *dir, const struct vr_job *j, char *path, size_t plen, char *err,
                   size_t errlen);

/* Removes a record published at path. 0, -ENOENT, or a negative errno. */
int vr_job_withdraw(const char *path);

/*
 * The jobs process pid (0: this process) is in, innermost first: the tree
 * records of the process and its ancestors (nearest first), then the
 * cgroup records of its cgroups (deepest first); one per group (a group
 * found twice is kept where first found). Each is believed only as the top
 * of this file says. proc_root: /proc (NULL) or a fake one; cgroup_root:
 * where the cgroup v2 hierarchy is mounted (NULL: found; v1 hierarchies are
 * under /sys/fs/cgroup). Returns how many were written to out (0..n); a
 * record that cannot be read or believed is skipped.
 */
int vr_jobs_of(const char *dir, const char *proc_root, const char *cgroup_root, pid_t pid,
               struct vr_job *out, int n);

/*
 * A record of the group gdir/group in the jobs directory, believed as
 * vr_jobs_of believes one (its file root's, or its writer's proof), into
 * *out: 1, or 0 when there is none (a launcher asks whether a job has a cap
 * on this node: a Slurm step started without the job's option).
 */
int vr_jobs_of_group(const char *dir, const char *gdir, const char *group, struct vr_job *out);

/* Removes every record of the group gdir/group the caller may remove (the
 * Slurm epilog, as root). Returns how many. */
int vr_jobs_withdraw_group(const char *dir, const char *gdir, const char *group);

/* 1 when process pid is in job j: one of its ancestors (or itself) is j's
 * root (PID and start time), or its cgroup in j's hierarchy is j's or
 * below it; 0 when not or when it cannot be read. proc_root as above. */
int vr_job_holds(const struct vr_job *j, const char *proc_root, pid_t pid);

/* Parses a record's text (len bytes) into *j. 0, or -EBADMSG with a line in
 * err (no proof checked: vr_jobs_of does that). */
int vr_job_parse(const char *text, size_t len, struct vr_job *j, char *err, size_t errlen);

/* A record's text for j into buf. The length, or -ENAMETOOLONG / -EINVAL
 * (a field holds a newline, or the identity is missing). */
int vr_job_format(const struct vr_job *j, char *buf, size_t len);

/* The file name a record of j has in the jobs directory. 0 or -ENAMETOOLONG. */
int vr_job_name(const struct vr_job *j, char *buf, size_t len);

/* 1 when both name the same group's books (directory and name). */
int vr_job_same_group(const struct vr_job *a, const struct vr_job *b);

#endif /* VRAMCTL_REGISTRY_JOBS_H */
