/*
 * drvlimit.c - the driver's memory limits of a Slurm step (drvlimit.h).
 *
 * Where the limit goes: a step's processes must all be below the cgroup
 * whose limit holds them. With proctrack/cgroup on cgroup v2 that is
 * Slurm's step cgroup (its tasks' cgroups are below it). Elsewhere the
 * tasks share slurmd's cgroup with everything else: each task moves itself
 * into "vramctl_<job>.<step>", a leaf made below it, before exec, and
 * slurmstepd, still where it was, removes it at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cgroup2.h"
#include "common/nvml_api.h"
#include "common/size.h"
#include "monitor/drvlimit.h"
#include "monitor/nvml.h"
#include "slurm/drvlimit.h"

/* The step's cgroup: its path below the root (NVML's name in ns), its
 * directory in dir. 0, or -1 with a reason in msg. */
static int step_cgroup(spank_t sp, const struct vr_slurm_conf *conf, char *ns, size_t nlen,
                       char *dir, size_t dlen, int *made, char *msg, size_t len)
{
	uint32_t job = 0, step = 0;
	char own[VR_CGROUP2_LEN], cg[VR_CGROUP2_LEN + 64], probe[VR_SLURM_TEXT_MAX + 32];
	snprintf(probe, sizeof(probe), "%s/cgroup.controllers", conf->cgroup_root);
	if (access(probe, R_OK) != 0) {
		snprintf(msg, len, "%s is not a cgroup v2 hierarchy (cgroup_root=)",
		         conf->cgroup_root);
		return -1;
	}
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    vr_cgroup2_of(0, own, sizeof(own)) != 0 ||
	    vr_slurm_step_cgroup(own, job, step, cg, sizeof(cg), made) != 0) {
		snprintf(msg, len, "cannot tell the step's cgroup (/proc/self/cgroup)");
		return -1;
	}
	snprintf(dir, dlen, "%s%s", conf->cgroup_root, cg);
	vr_cgroup2_ns(cg, ns, nlen);
	return 0;
}

int vr_slurm_step_gpus(spank_t sp, struct mon_nvml *nv, unsigned *idx)
{
	char buf[512];
	int n = 0;
	if (spank_getenv(sp, "SLURM_STEP_GPUS", buf, sizeof(buf)) != ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_JOB_GPUS", buf, sizeof(buf)) != ESPANK_SUCCESS) {
		vr_pfn_nvmlDeviceGetCount_v2 count =
		    (vr_pfn_nvmlDeviceGetCount_v2)mon_nvml_sym(nv, "nvmlDeviceGetCount_v2");
		unsigned all = 0;
		if (!count || count(&all) != NVML_SUCCESS)
			return 0;
		for (unsigned i = 0; i < all && n < VR_SLURM_GPUS_MAX; i++)
			idx[n++] = i;
		return n;
	}
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < VR_SLURM_GPUS_MAX;
	     t = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(t, &end, 10);
		if (end != t && !*end)
			idx[n++] = (unsigned)v;
	}
	return n;
}

int vr_slurm_driver_set(spank_t sp, const struct vr_slurm_conf *conf, const char *spec,
                        const char *gspec, char *msg, size_t len)
{
	char ns[VR_CGROUP2_LEN + 80], dir[VR_SLURM_TEXT_MAX + VR_CGROUP2_LEN + 64], err[256];
	struct vr_limits lim, guar;
	unsigned idx[VR_SLURM_GPUS_MAX];
	int made, n, have_guar = 0;
	struct mon_nvml *nv = NULL;

	msg[0] = '\0';
	if (vr_parse_limits(spec, &lim, err, sizeof(err)) != 0) {
		snprintf(msg, len, "the cap '%s': %s", spec, err);
		return 0;
	}
	if (gspec && gspec[0])
		have_guar = vr_parse_limits(gspec, &guar, err, sizeof(err)) == 0;
	if (step_cgroup(sp, conf, ns, sizeof(ns), dir, sizeof(dir), &made, msg, len) != 0)
		return 0;
	if (mon_nvml_open(conf->nvml[0] ? conf->nvml : NULL, &nv, err, sizeof(err)) < 0) {
		snprintf(msg, len, "%s", err);
		return 0;
	}
	if ((n = vr_slurm_step_gpus(sp, nv, idx)) == 0) {
		snprintf(msg, len, "NVML lists no GPU for the step");
		mon_nvml_close(nv);
		return 0;
	}
	if (made && mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(msg, len, "cannot make the cgroup %s: %s", dir, strerror(errno));
		mon_nvml_close(nv);
		return 0;
	}
	int ok = 1;
	for (int k = 0; k < n && ok; k++) {
		char uuid[96];
		unsigned long long total;
		uint64_t cap, soft = 0;
		int r =
		    mon_drvlimit_device(nv, idx[k], uuid, sizeof(uuid), &total, err, sizeof(err));
		if (r == NVML_SUCCESS && !vr_limits_cap_for(&lim, k, uuid, total, &cap))
			continue; /* this GPU is not capped */
		if (r == NVML_SUCCESS && have_guar &&
		    vr_limits_cap_for(&guar, k, uuid, total, &soft))
			soft = soft > cap ? cap : soft;
		if (r == NVML_SUCCESS)
			r = mon_drvlimit_set(nv, uuid, ns, soft, cap, err, sizeof(err));
		if (r != NVML_SUCCESS) {
			snprintf(msg, len, "GPU %u: %s%s", idx[k], err,
			         r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND
			             ? " (needs a driver of R615 or later, not in MIG mode)"
			             : "");
			ok = 0;
		}
	}
	/* The task joins the cgroup the plugin made only once its limits hold. */
	if (ok && made && (errno = -vr_cgroup2_move(dir, 0)) != 0) {
		snprintf(msg, len, "cannot move the task into %s: %s", dir, strerror(errno));
		ok = 0;
	}
	mon_nvml_close(nv);
	return ok;
}

void vr_slurm_driver_clear(spank_t sp, const struct vr_slurm_conf *conf)
{
	char ns[VR_CGROUP2_LEN + 80], dir[VR_SLURM_TEXT_MAX + VR_CGROUP2_LEN + 64], err[256];
	char why[256];
	unsigned idx[VR_SLURM_GPUS_MAX];
	int made, n;
	struct mon_nvml *nv = NULL;

	if (step_cgroup(sp, conf, ns, sizeof(ns), dir, sizeof(dir), &made, why, sizeof(why)) != 0)
		return;
	if (made && access(dir, F_OK) != 0)
		return; /* nothing was set for this step */
	if (mon_nvml_open(conf->nvml[0] ? conf->nvml : NULL, &nv, err, sizeof(err)) < 0) {
		slurm_error("vramctl: cannot clear the driver's limits of %s: %s", ns, err);
		return;
	}
	n = vr_slurm_step_gpus(sp, nv, idx);
	for (int k = 0; k < n; k++) {
		char uuid[96];
		unsigned long long total;
		int r =
		    mon_drvlimit_device(nv, idx[k], uuid, sizeof(uuid), &total, err, sizeof(err));
		if (r == NVML_SUCCESS)
			r = mon_drvlimit_clear(nv, uuid, ns, err, sizeof(err));
		if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED &&
		    r != NVML_ERROR_FUNCTION_NOT_FOUND)
			slurm_error("vramctl: cannot clear the driver's limit of %s on GPU %u: %s",
			            ns, idx[k], err);
	}
	mon_nvml_close(nv);
	if (made && !vr_cgroup2_populated(dir) && rmdir(dir) != 0 && errno != ENOENT)
		slurm_error("vramctl: cannot remove the cgroup %s: %s", dir, strerror(errno));
}
