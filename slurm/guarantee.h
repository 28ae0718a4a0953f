/*
 * guarantee.h - the Slurm plugin's guarantees (--gpu-mem-guarantee, #38):
 * slurmstepd's root half writes the step's guarantee into the device book
 * of each of its GPUs itself (vr_devbook_admit, the one place that
 * decides), held by slurmstepd for the step; the tasks find it by the
 * token the contract gives them (VRAMCTL_GUARANTEE_TOKEN). Needs Slurm's
 * header, like vramctl_spank.c.
 */
#ifndef VRAMCTL_SLURM_GUARANTEE_H
#define VRAMCTL_SLURM_GUARANTEE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "slurm/policy.h"

/* The name of a job's group's guarantee in the device book (a token, not
 * a secret: only the job's user's processes can use it), from its group's
 * name. Never 0. */
uint64_t vr_slurm_guarantee_token(const char *group);

/*
 * In a task of the step, as root, before exec: on each GPU of the step
 * (vr_slurm_step_gpus) where gspec gives a guarantee (at most spec's cap
 * there), the group's guarantee admitted for the job's user uid, or
 * joined, held by slurmstepd (the task's parent) for the step. Returns 1
 * when every guarantee asked was given, 0 when not, with the one line for
 * the job's output in msg.
 */
int vr_slurm_guarantee_give(spank_t sp, const struct vr_slurm_conf *conf, const char *spec,
                            const char *gspec, uid_t uid, const char *group, char *msg, size_t len);

#endif /* VRAMCTL_SLURM_GUARANTEE_H */
