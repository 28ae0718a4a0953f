/*
 * drvlimit.h - the Slurm plugin's second enforcer (enforce=driver|both in
 * plugstack.conf): the NVIDIA driver's own per-cgroup memory limit (R615,
 * cgroup v2) on each job step, set by slurmstepd as root through NVML
 * (drvlimit.c). Needs Slurm's header, like vramctl_spank.c.
 */
#ifndef VRAMCTL_SLURM_DRVLIMIT_H
#define VRAMCTL_SLURM_DRVLIMIT_H

#include <stddef.h>

#include <slurm/spank.h>

#include "slurm/policy.h"

struct mon_nvml;

/* The GPUs of the step as NVML numbers them, at most VR_SLURM_GPUS_MAX:
 * SLURM_STEP_GPUS, else SLURM_JOB_GPUS ("0,2"); a step Slurm gave no GPU
 * sees them all, as the library caps them all. Returns how many. */
#define VR_SLURM_GPUS_MAX 64
int vr_slurm_step_gpus(spank_t sp, struct mon_nvml *nv, unsigned *idx);

/*
 * In a task of the step, as root, before exec: the step's cgroup
 * (vr_slurm_step_cgroup; made and the task moved in where Slurm has none)
 * gets, on each GPU of the step (SLURM_STEP_GPUS, else SLURM_JOB_GPUS:
 * NVML's indices; none: every GPU), the hard limit spec's cap and the soft
 * limit the guarantee gspec gives there (the cap grammar, as
 * vr_slurm_guarantee checked it; "" or none there: 0). Returns 1 when the
 * driver holds the cap on every GPU, 0 when not, with the one line for the
 * job's output in msg.
 */
int vr_slurm_driver_set(spank_t sp, const struct vr_slurm_conf *conf, const char *spec,
                        const char *gspec, char *msg, size_t len);

/*
 * In slurmstepd as the step ends, as root: clears the limits of the step's
 * cgroup on every GPU (soft first, then hard, while the cgroup is still
 * there), and removes a cgroup the plugin made once it is empty.
 */
void vr_slurm_driver_clear(spank_t sp, const struct vr_slurm_conf *conf);

#endif /* VRAMCTL_SLURM_DRVLIMIT_H */
