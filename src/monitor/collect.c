/*
 * collect.c - the monitor's collection layer: NVML + registry -> model.
 */
#include <stdio.h>
#include <time.h>

#include "monitor/collect.h"
#include "registry/registry.h"

int mon_collect_nvml(const struct mon_sources *src, struct mon_model *out)
{
	if (src->nvml)
		return mon_nvml_read(src->nvml, out);
	mon_model_note(out, "%s: GPU totals and uncapped processes unknown",
	               src->nvml_error ? src->nvml_error : "NVML not found");
	return 0;
}

int mon_collect(const struct mon_sources *src, struct mon_model *out)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int rc = mon_collect_nvml(src, out);
	if (rc < 0)
		return rc;
	out->time_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (src->registry_dir)
		snprintf(out->registry_dir, sizeof(out->registry_dir), "%s", src->registry_dir);
	else
		vr_default_dir(out->registry_dir, sizeof(out->registry_dir));
	struct vramctl_snapshot *snap = NULL;
	int src_rc = vramctl_snapshot_take(out->registry_dir, &snap);
	rc = mon_merge_registry(out, src_rc == 0 ? snap : NULL, src_rc, src->proc_root);
	if (snap)
		vramctl_snapshot_free(snap);
	if (rc < 0)
		mon_model_clear(out);
	return rc;
}
