/*
 * collect.c - the monitor's collection layer: NVML + registry -> model.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "monitor/collect.h"
#include "monitor/drvlimit.h"
#include "monitor/escape.h"
#include "common/siteconf.h"
#include "monitor/guarantee.h"
#include "monitor/merge.h"
#include "registry/registry.h"

int mon_collect_nvml(const struct mon_sources *src, struct mon_model *out)
{
	if (src->nvml)
		return mon_nvml_read(src->nvml, out);
	mon_model_note(out, "%s: GPU totals and uncapped processes unknown",
	               src->nvml_error ? src->nvml_error : "NVML not found");
	return 0;
}

int mon_collect_registry(const struct mon_sources *src, struct mon_model *m)
{
	if (src->registry_dir)
		snprintf(m->registry_dir, sizeof(m->registry_dir), "%s", src->registry_dir);
	else
		vr_default_dir(m->registry_dir, sizeof(m->registry_dir));
	struct vramctl_snapshot *snap = NULL;
	struct stat st;
	int snap_rc;
	/* A directory named by the caller (--registry) that is not there is
	 * not a registry with nothing in it: nothing can be seen. The default
	 * one not made yet is normal (no capped process ran with it). */
	if (src->registry_dir && stat(m->registry_dir, &st) < 0)
		snap_rc = errno == ENOENT ? -ENOENT : -errno;
	else if (src->registry_dir && !S_ISDIR(st.st_mode))
		snap_rc = -ENOTDIR;
	else
		snap_rc = vramctl_snapshot_take(m->registry_dir, &snap);
	int rc = mon_merge_registry(m, snap_rc == 0 ? snap : NULL, snap_rc, src->proc_root);
	if (snap)
		vramctl_snapshot_free(snap);
	if (rc == 0)
		mon_escape_mark(m, src->proc_root, NULL); /* a job's processes outside its cap */
	if (rc == 0)
		rc = mon_guarantee_read(m, NULL); /* the device books */
	if (rc < 0)
		mon_model_clear(m);
	else
		mon_drvlimit_fill(src->nvml, m, src->proc_root);
	return rc;
}

int mon_collect(const struct mon_sources *src, struct mon_model *out)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int rc = mon_collect_nvml(src, out);
	if (rc < 0)
		return rc;
	out->time_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	/* What `vramctl run` refuses over and the library fails closed on is
	 * said here too, so that every view names the file and line. */
	const struct vr_site *site = vr_site_get();
	if (site->bad)
		mon_model_note(out,
		               "config: %s; until it is fixed, vramctl run refuses to start and "
		               "the library refuses every allocation (vramctl.conf(5))",
		               site->err);
	return mon_collect_registry(src, out);
}
