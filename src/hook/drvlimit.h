/*
 * drvlimit.h - the NVIDIA driver's own memory limit over this process
 * (R615's per-cgroup limits, set by root through NVML: the Slurm plugin's
 * enforce=driver, `vramctl run --enforce driver`, NVIDIA's container
 * toolkit), as the injected library sees it (drvlimit.c). The library
 * never sets it; it reads it with NVML's unprivileged call to explain an
 * allocation the driver refused that vramctl's books had allowed.
 * What the program is shown needs nothing here: the driver's own
 * cuMemGetInfo already reports the limit as the total inside the cgroup,
 * and the cap clamps that (query.c), so the program sees the smaller.
 */
#ifndef VRAMCTL_HOOK_DRVLIMIT_H
#define VRAMCTL_HOOK_DRVLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "hook/dev.h"

/*
 * The tightest driver hard limit over this process's cgroup and its
 * ancestors on d's GPU: 1 with the limit, what that cgroup holds and the
 * cgroup's path ("/a/b") in cg; 0 when there is none or it cannot be told
 * (no NVML yet, a driver before R615, cgroup v1). Asks NVML once per level
 * of the path: for the rare refusal, not for every allocation.
 */
int vr_drvlimit_of(const struct vr_dev *d, uint64_t *limit, uint64_t *used, char *cg, size_t n);

/*
 * The driver refused an allocation of bytes on d that the books allowed
 * (CUDA_ERROR_OUT_OF_MEMORY): when a driver limit holds this process
 * (vr_drvlimit_of), one denial line that names it and its cgroup, rate
 * limited as vramctl's own; else nothing (a full card says nothing, as
 * before).
 */
void vr_drvlimit_explain(struct vr_dev *d, uint64_t bytes);

#endif /* VRAMCTL_HOOK_DRVLIMIT_H */
