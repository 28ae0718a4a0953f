/*
 * drvlimit.c - the driver's per-cgroup memory limit over this process
 * (drvlimit.h), read through the library's own NVML (nvmlproc.c).
 */
#include <stdio.h>
#include <string.h>

#include "common/cgroup2.h"
#include "common/size.h"
#include "hook/drvlimit.h"
#include "hook/hook.h"
#include "hook/nvmlproc.h"

int vr_drvlimit_of(const struct vr_dev *d, uint64_t *limit, uint64_t *used, char *cg, size_t n)
{
	char path[VR_CGROUP2_LEN], ns[VR_CGROUP2_LEN + 32];
	int found = 0;
	if (!d || vr_nvml_ready() != NV_READY || !vr_real.nvmlDeviceGetMemoryLimits_v1)
		return 0;
	if (vr_cgroup2_of(0, path, sizeof(path)) != 0)
		return 0;
	nvmlDevice_t h;
	nvmlReturn_t r;
	VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(d->uuid_text, &h));
	if (r != NVML_SUCCESS)
		return 0;
	/* This cgroup, then each ancestor up to the root: a limit on a parent
	 * (a Slurm step's, over its tasks' cgroups) holds its children. */
	for (;;) {
		nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
		if (vr_cgroup2_ns(path, ns, sizeof(ns)) != 0)
			break;
		VR_OWN(r = vr_real.nvmlDeviceGetMemoryLimits_v1(h, &l));
		if (r != NVML_SUCCESS)
			break; /* NOT_SUPPORTED: an older driver, MIG */
		if (l.hardLimit != NVML_DEVICE_MEMORY_LIMIT_MAX &&
		    (!found || l.hardLimit < *limit)) {
			found = 1;
			*limit = l.hardLimit;
			*used = l.currentUsed;
			snprintf(cg, n, "%s", path);
		}
		char *slash = strrchr(path, '/');
		if (!slash || !strcmp(path, "/"))
			break;
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	return found;
}

void vr_drvlimit_explain(struct vr_dev *d, uint64_t bytes)
{
	char cg[VR_CGROUP2_LEN], more[64], a[32], b[32], c[32];
	uint64_t limit = 0, used = 0;
	if (!vr_drvlimit_of(d, &limit, &used, cg, sizeof(cg)) ||
	    !vr_log_denial_gate(more, sizeof more))
		return;
	const uint64_t shown[] = {bytes, limit, used};
	int dg = vr_size_digits(shown, 3, 1);
	vr__log(VR_LOG_WARN,
	        "denied %s on GPU %d by the driver: its memory limit of cgroup %s, %s, %s in use "
	        "there (NVIDIA's per-cgroup limit, under vramctl's cap)%s",
	        vr_format_size_digits(bytes, dg, a, sizeof a), d->ordinal, cg,
	        vr_format_size_digits(limit, dg, b, sizeof b),
	        vr_format_size_digits(used, dg, c, sizeof c), more);
}
