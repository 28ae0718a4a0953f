/*
 * drvlimit.c - the driver's per-cgroup memory limits through NVML
 * (drvlimit.h). Looked up by name each call: drivers before R615 lack both
 * entry points, and that is an answer, not an error to report loudly.
 */
#include "monitor/drvlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cgroup2.h"
#include "common/nvml_api.h"

/* The handle of the device with this UUID, or an NVML error (text in err). */
static int handle(struct mon_nvml *nv, const char *uuid, nvmlDevice_t *h, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceGetHandleByUUID by_uuid =
	    (vr_pfn_nvmlDeviceGetHandleByUUID)mon_nvml_sym(nv, "nvmlDeviceGetHandleByUUID");
	if (!by_uuid) {
		snprintf(err, errlen, "NVML has no nvmlDeviceGetHandleByUUID");
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	}
	int r = by_uuid(uuid, h);
	if (r != NVML_SUCCESS)
		snprintf(err, errlen, "%s: %s", uuid, mon_nvml_error(nv, r));
	return r;
}

static int missing(const char *name, char *err, size_t errlen)
{
	snprintf(err, errlen, "this NVML has no %s (a driver before R%d)", name,
	         MON_DRVLIMIT_RELEASE);
	return NVML_ERROR_FUNCTION_NOT_FOUND;
}

int mon_drvlimit_get(struct mon_nvml *nv, const char *uuid, const char *ns,
                     struct mon_drvlimit *out, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceGetMemoryLimits_v1 get =
	    (vr_pfn_nvmlDeviceGetMemoryLimits_v1)mon_nvml_sym(nv, "nvmlDeviceGetMemoryLimits_v1");
	nvmlDevice_t h;
	if (!get)
		return missing("nvmlDeviceGetMemoryLimits_v1", err, errlen);
	int r = handle(nv, uuid, &h, err, errlen);
	if (r != NVML_SUCCESS)
		return r;
	nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
	r = get(h, &l);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "%s", mon_nvml_error(nv, r));
		return r;
	}
	out->soft = l.softLimit;
	out->hard = l.hardLimit;
	out->used = l.currentUsed;
	return NVML_SUCCESS;
}

int mon_drvlimit_set(struct mon_nvml *nv, const char *uuid, const char *ns, unsigned long long soft,
                     unsigned long long hard, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceSetMemoryLimits_v1 set =
	    (vr_pfn_nvmlDeviceSetMemoryLimits_v1)mon_nvml_sym(nv, "nvmlDeviceSetMemoryLimits_v1");
	nvmlDevice_t h;
	if (!set)
		return missing("nvmlDeviceSetMemoryLimits_v1", err, errlen);
	int r = handle(nv, uuid, &h, err, errlen);
	if (r != NVML_SUCCESS)
		return r;
	nvmlSetMemoryLimits_v1_t l = {.nameSpace = ns, .softLimit = soft, .hardLimit = hard};
	r = set(h, &l);
	if (r != NVML_SUCCESS)
		snprintf(err, errlen, "%s", mon_nvml_error(nv, r));
	return r;
}

int mon_drvlimit_is_set(const struct mon_drvlimit *l)
{
	return l->hard != NVML_DEVICE_MEMORY_LIMIT_MAX;
}

int mon_drvlimit_can(struct mon_nvml *nv, const char *uuid, const char *ns)
{
	struct mon_drvlimit l;
	char err[160], release[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
	int r = mon_drvlimit_get(nv, uuid, ns, &l, err, sizeof(err));
	if (r == NVML_SUCCESS)
		return 1;
	if (r != NVML_ERROR_NOT_SUPPORTED)
		return 0;
	vr_pfn_nvmlSystemGetDriverVersion version =
	    (vr_pfn_nvmlSystemGetDriverVersion)mon_nvml_sym(nv, "nvmlSystemGetDriverVersion");
	if (!version || version(release, sizeof(release)) != NVML_SUCCESS)
		return 0;
	return atoi(release) >= MON_DRVLIMIT_RELEASE;
}

int mon_drvlimit_clear(struct mon_nvml *nv, const char *uuid, const char *ns, char *err,
                       size_t errlen)
{
	struct mon_drvlimit l;
	int r = mon_drvlimit_get(nv, uuid, ns, &l, err, errlen);
	if (r != NVML_SUCCESS || (!mon_drvlimit_is_set(&l) && l.soft == 0))
		return r;
	if (l.soft && (r = mon_drvlimit_set(nv, uuid, ns, 0, l.hard, err, errlen)) != NVML_SUCCESS)
		return r;
	return mon_drvlimit_set(nv, uuid, ns, 0, NVML_DEVICE_MEMORY_LIMIT_MAX, err, errlen);
}

int mon_drvlimit_device(struct mon_nvml *nv, unsigned index, char *uuid, size_t ulen,
                        unsigned long long *total, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceGetHandleByIndex_v2 by_index =
	    (vr_pfn_nvmlDeviceGetHandleByIndex_v2)mon_nvml_sym(nv, "nvmlDeviceGetHandleByIndex_v2");
	vr_pfn_nvmlDeviceGetUUID get_uuid =
	    (vr_pfn_nvmlDeviceGetUUID)mon_nvml_sym(nv, "nvmlDeviceGetUUID");
	vr_pfn_nvmlDeviceGetMemoryInfo_v2 mem =
	    (vr_pfn_nvmlDeviceGetMemoryInfo_v2)mon_nvml_sym(nv, "nvmlDeviceGetMemoryInfo_v2");
	nvmlDevice_t h;
	nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
	int r = by_index && get_uuid && mem ? by_index(index, &h) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		r = get_uuid(h, uuid, (unsigned)ulen);
	if (r == NVML_SUCCESS)
		r = mem(h, &m);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "NVML device %u: %s", index, mon_nvml_error(nv, r));
		return r;
	}
	*total = m.total - m.reserved;
	return NVML_SUCCESS;
}

/* The walk over one process's cgroup and its ancestors. */
struct walk {
	struct mon_nvml *nv;
	const char *uuid;
	int found;
	struct mon_drv *out;
};

static int visit(const char *ns, void *ctx)
{
	struct walk *w = ctx;
	struct mon_drvlimit l;
	char err[160];
	int r = mon_drvlimit_get(w->nv, w->uuid, ns, &l, err, sizeof(err));
	/* NOT_SUPPORTED: no limit on this cgroup (R615 answers so where none
	 * is set, as where it cannot limit at all): its parent's may hold.
	 * Any other answer: no limits to read on this driver or GPU. */
	if (r == NVML_ERROR_NOT_SUPPORTED)
		return 0;
	if (r != NVML_SUCCESS)
		return 1;
	if (mon_drvlimit_is_set(&l) && (!w->found || l.hard < w->out->hard)) {
		w->found = 1;
		w->out->hard = l.hard;
		w->out->soft = l.soft;
		w->out->used = l.used;
		const char *rel = ns + strlen(VR_CGROUP2_MOUNT);
		snprintf(w->out->cgroup, sizeof(w->out->cgroup), "%s", rel[0] ? rel : "/");
	}
	return 0;
}

/* The answer for the row before (its GPU and cgroup): rows of one process,
 * and the processes of one cgroup, come together in the table's order
 * often enough that remembering one walk saves most of NVML's calls. */
struct last_walk {
	const char *uuid, *cgroup;
	int found;
	struct mon_drv drv;
};

void mon_drvlimit_fill(struct mon_nvml *nv, struct mon_model *m, const char *proc_root)
{
	if (!nv || !mon_nvml_sym(nv, "nvmlDeviceGetMemoryLimits_v1"))
		return; /* a driver before R615: nothing to ask */
	struct last_walk last = {0};
	for (int i = 0; i < m->nprocs; i++) {
		struct mon_proc *p = &m->procs[i];
		if (!(p->valid & MON_P_HOST_PID) || !p->uuid[0] || p->state != MON_PROC_ALIVE)
			continue;
		/* Its cgroup as the identity read it (the kernel's word), else
		 * from /proc now. */
		if (!(p->valid & MON_P_CGROUP2)) {
			if (vr_cgroup2_read(proc_root, p->host_pid, p->cgroup2,
			                    sizeof(p->cgroup2)) != 0)
				continue;
			p->valid |= MON_P_CGROUP2;
		}
		struct walk w = {.nv = nv, .uuid = p->uuid, .out = &p->drv};
		if (last.uuid && !strcmp(last.uuid, p->uuid) && !strcmp(last.cgroup, p->cgroup2)) {
			w.found = last.found;
			p->drv = last.drv;
		} else {
			vr_cgroup2_walk(p->cgroup2, visit, &w);
			last = (struct last_walk){p->uuid, p->cgroup2, w.found, p->drv};
		}
		if (!w.found)
			continue;
		p->valid |= MON_P_DRVLIMIT;
		if (!(p->valid & MON_P_CAPPED) || (p->valid & MON_P_ALONE))
			continue;
		for (int g = 0; g < m->ngroups; g++)
			if (!strcmp(m->groups[g].name, p->group))
				m->groups[g].ndriver++;
	}
}
