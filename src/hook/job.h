/*
 * job.h - the jobs this process is in, found without its environment
 * (job.c; docs/architecture.md, "Jobs"): at its first driver call, never
 * at its start.
 *
 * Three places say a process is in a capped job whatever its environment
 * says: the launchers' job records (registry/jobs.h: `vramctl run`'s
 * process tree, a Slurm job's cgroup), the container's contract file
 * (VR_CONTRACT_FILE, mounted read-only by the CDI spec), and the site's
 * per-user cap (vramctl.conf's user_limit: one group per user). A process
 * whose environment gave no cap takes the innermost as its own (said once:
 * its environment was changed); every other one whose group is not the
 * process's own holds it as well: an outer group, where each of its
 * allocations is counted too, so the environment can narrow a cap inside a
 * job but never widen or remove it (books.c, outer.c).
 */
#ifndef VRAMCTL_HOOK_JOB_H
#define VRAMCTL_HOOK_JOB_H

#include <stdint.h>
#include <sys/types.h>

#include "common/contract.h"
#include "registry/jobs.h"

/* Outer groups a process holds at most (nested jobs, the container, the
 * user's cap). */
#define VR_OUTER_MAX 4

/* An outer group: where the job's books are and the cap it asks. */
struct vr_outer_job {
	const char *what; /* "job", "container", "user": for messages */
	uint32_t owner;   /* the books' owner (root joins as that user: registry.h) */
	char dir[VR_JOB_TEXT];
	char group[VR_GROUP_NAME_MAX + 1];
	char limit[VR_JOB_SPEC];
};

/* Finds the jobs, once (thread-safe; later calls return at once): for a
 * process without a cap from its environment, adopts the innermost as its
 * contract (vr_config_set) and settles (vr_config_settle). Called at the
 * first driver or NVML call and the first look-up of a driver symbol. */
void vr_job_resolve(void);

/* The outer groups found (after vr_job_resolve): how many, into *out. */
int vr_job_outers(const struct vr_outer_job **out);

/* The owner of the books this process joins as its own group, when the
 * job it adopted is another user's (root only acts on it): 1 and *uid, else 0. */
int vr_job_owner(uid_t *uid);

/* A container's group when its contract names none: "pidns-<inode of its
 * PID namespace>". 0, or -1 in the host's own PID namespace. */
int vr_job_container_group(char *buf, size_t len);

#endif /* VRAMCTL_HOOK_JOB_H */
