/*
 * run_enforce.c - the driver's memory limit around `vramctl run`'s command
 * (run_enforce.h). The order matters: the cgroup is made and its limits
 * set while it is empty, then vramctl moves itself in (vramctl holds no GPU
 * memory: it never creates a context), so that the command it starts is
 * born under the limit with no moment outside it; vramctl moves back out
 * when the command ends. The command's cgroup is a leaf, and the cgroup
 * vramctl came from gets no controller enabled: nothing here can break
 * cgroup v2's "no internal processes" rule.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run_enforce.h"
#include "common/exit.h"
#include "common/nvml_api.h"
#include "monitor/drvlimit.h"
#include "monitor/nvml.h"

/* Clears the limits of the first n devices: soft first, then hard. */
static void clear_limits(struct run_drv *rd, int n)
{
	char err[256];
	for (int i = 0; i < n; i++) {
		if (mon_drvlimit_clear(rd->nv, rd->uuid[i], rd->ns, err, sizeof(err)) !=
		    NVML_SUCCESS)
			fprintf(stderr,
			        "vramctl: cannot clear the driver's limit of %s on %s: %s\n",
			        rd->ns, rd->uuid[i], err);
	}
}

static int refuse(const char *why)
{
	fprintf(stderr, "vramctl: run: --enforce driver: %s\n", why);
	return VR_EXIT_ERROR;
}

/* The cgroup to make: a child of this process's. 0, or an exit status. */
static int make_cgroup(struct run_drv *rd)
{
	char cg[VR_CGROUP2_LEN], child[VR_CGROUP2_LEN + 64], why[PATH_MAX + 160];
	if (!vr_cgroup2_mounted()) {
		snprintf(why, sizeof(why),
		         "%s is not a cgroup v2 hierarchy: the driver's limits need cgroup v2 "
		         "(use --enforce library)",
		         vr_cgroup2_root());
		return refuse(why);
	}
	if (vr_cgroup2_of(0, cg, sizeof(cg)) != 0)
		return refuse("this process has no cgroup v2 path (/proc/self/cgroup)");
	snprintf(child, sizeof(child), "%s/vramctl-run-%d", strcmp(cg, "/") ? cg : "",
	         (int)getpid());
	const char *root = vr_cgroup2_root();
	snprintf(rd->home, sizeof(rd->home), "%s%s", root, strcmp(cg, "/") ? cg : "");
	snprintf(rd->dir, sizeof(rd->dir), "%s%s", root, child);
	vr_cgroup2_ns(child, rd->ns, sizeof(rd->ns));
	if (mkdir(rd->dir, 0755) != 0) {
		snprintf(why, sizeof(why),
		         "cannot make the cgroup %s: %s (needs root, or a cgroup v2 subtree "
		         "delegated to you; else --enforce library)",
		         rd->dir, strerror(errno));
		return refuse(why);
	}
	return 0;
}

int run_drv_enter(struct run_drv *rd, const struct vr_limits *lim, const struct vr_limits *gua,
                  const struct vr_launch_dev *devs, int ndev)
{
	char err[256], why[PATH_MAX + 400];
	memset(rd, 0, sizeof(*rd));
	if (ndev <= 0)
		return refuse("no GPU to set a limit on (no driver, or no device visible)");
	if (mon_nvml_open(NULL, &rd->nv, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		return refuse(why);
	}
	int rc = make_cgroup(rd);
	if (rc != 0) {
		mon_nvml_close(rd->nv);
		return rc;
	}
	for (int i = 0; i < ndev && i < VR_MAX_DEVICES; i++) {
		uint64_t cap, soft = 0;
		if (!vr_limits_cap_for(lim, devs[i].index, devs[i].uuid, devs[i].total, &cap))
			continue;
		if (gua &&
		    vr_limits_cap_for(gua, devs[i].index, devs[i].uuid, devs[i].total, &soft))
			soft = soft < cap ? soft : cap;
		int r = mon_drvlimit_set(rd->nv, devs[i].uuid, rd->ns, soft, cap, err, sizeof(err));
		if (r != NVML_SUCCESS) {
			snprintf(why, sizeof(why), "the driver refused the limit on GPU %d: %s%s",
			         i, err,
			         r == NVML_ERROR_NO_PERMISSION ? " (setting it needs root)"
			         : r == NVML_ERROR_NOT_SUPPORTED ||
			                 r == NVML_ERROR_FUNCTION_NOT_FOUND
			             ? " (needs a driver of R615 or later, not in MIG mode, and a "
			               "cgroup other than the root one)"
			             : "");
			clear_limits(rd, rd->n);
			rmdir(rd->dir);
			mon_nvml_close(rd->nv);
			return refuse(why);
		}
		snprintf(rd->uuid[rd->n], sizeof(rd->uuid[rd->n]), "%s", devs[i].uuid);
		rd->n++;
	}
	if ((rc = vr_cgroup2_move(rd->dir, 0)) != 0) {
		snprintf(why, sizeof(why), "cannot move into %s: %s", rd->dir, strerror(-rc));
		clear_limits(rd, rd->n);
		rmdir(rd->dir);
		mon_nvml_close(rd->nv);
		return refuse(why);
	}
	return 0;
}

void run_drv_leave(struct run_drv *rd)
{
	int rc = vr_cgroup2_move(rd->home, 0);
	if (rc != 0)
		fprintf(stderr, "vramctl: cannot move back to %s: %s\n", rd->home, strerror(-rc));
	if (rc != 0 || vr_cgroup2_populated(rd->dir)) {
		fprintf(stderr,
		        "vramctl: processes of the command are still in %s: the cgroup and the "
		        "driver's limits stay until they end (rmdir it then)\n",
		        rd->dir);
	} else {
		clear_limits(rd, rd->n);
		if (rmdir(rd->dir) != 0)
			fprintf(stderr, "vramctl: cannot remove the cgroup %s: %s\n", rd->dir,
			        strerror(errno));
	}
	mon_nvml_close(rd->nv);
}
