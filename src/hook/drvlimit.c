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

/* What vr_drvlimit_of's walk carries: the device, the tightest limit. */
struct walk {
	nvmlDevice_t h;
	int found;
	uint64_t limit, used;
	char *cg;
	size_t n;
};

static int visit(const char *ns, void *ctx)
{
	struct walk *w = ctx;
	nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
	nvmlReturn_t r;
	VR_OWN(r = vr_real.nvmlDeviceGetMemoryLimits_v1(w->h, &l));
	/* NOT_SUPPORTED: no limit on this cgroup (R615 answers so where none
	 * is set, as where it cannot limit): its parent's may hold. */
	if (r != NVML_SUCCESS)
		return r == NVML_ERROR_NOT_SUPPORTED ? 0 : 1;
	if (l.hardLimit != NVML_DEVICE_MEMORY_LIMIT_MAX && (!w->found || l.hardLimit < w->limit)) {
		w->found = 1;
		w->limit = l.hardLimit;
		w->used = l.currentUsed;
		snprintf(w->cg, w->n, "%s", ns + strlen(VR_CGROUP2_MOUNT));
		if (!w->cg[0])
			snprintf(w->cg, w->n, "/");
	}
	return 0;
}

int vr_drvlimit_of(const struct vr_dev *d, uint64_t *limit, uint64_t *used, char *cg, size_t n)
{
	char path[VR_CGROUP2_LEN];
	struct walk w = {.cg = cg, .n = n};
	if (!d || vr_nvml_ready() != NV_READY || !vr_real.nvmlDeviceGetMemoryLimits_v1)
		return 0;
	if (vr_cgroup2_of(0, path, sizeof(path)) != 0)
		return 0;
	nvmlReturn_t r;
	VR_OWN(r = vr_real.nvmlDeviceGetHandleByUUID(d->uuid_text, &w.h));
	if (r != NVML_SUCCESS)
		return 0;
	/* This cgroup, then each ancestor up to the root: a limit on a parent
	 * (a Slurm step's, over its tasks' cgroups) holds its children. */
	vr_cgroup2_walk(path, visit, &w);
	if (w.found) {
		*limit = w.limit;
		*used = w.used;
	}
	return w.found;
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
