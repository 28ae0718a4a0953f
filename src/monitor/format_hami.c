/*
 * format_hami.c - the series of HAMi's node monitor (Project-HAMi/HAMi,
 * cmd/vGPUmonitor/metrics.go: the names and labels, not its code), from a
 * vramctl model, so dashboards and alerts written for HAMi read vramctl
 * unchanged. Pure, as format.c. Which series map, and how, is in
 * docs/kubernetes.md ("HAMi's metrics").
 *
 * HAMi's series are per container and device; vramctl's rows per process
 * and device. Live capped rows whose pod is known (namespace and name from
 * the process's environment) are summed per (namespace, pod, container,
 * device); the container is its name, else the 12-digit short container
 * ID. Rows without a pod are left out: HAMi lists only pods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/format.h"

/* HAMi's collector is registered with this constant label. */
#define ZONE "vGPU"

/* One container's figures on one device. */
struct hami_ctr {
	const struct mon_proc *first; /* names and device from it */
	char ctr[MON_K8S_LABEL_MAX];  /* the container label */
	int vdev;                     /* the device's place in the group's books */
	uint64_t used, limit, allocated, overhead;
};

static void ctr_label(const struct mon_proc *p, char *out, size_t len)
{
	if (p->container_name[0])
		snprintf(out, len, "%s", p->container_name);
	else
		snprintf(out, len, "%.12s", p->container_id);
}

static int cmp_ctr(const void *a, const void *b)
{
	const struct hami_ctr *x = a, *y = b;
	int c = strcmp(x->first->pod_namespace, y->first->pod_namespace);
	if (!c)
		c = strcmp(x->first->pod_name, y->first->pod_name);
	if (!c)
		c = strcmp(x->ctr, y->ctr);
	if (!c)
		c = strcmp(x->first->uuid, y->first->uuid);
	return c;
}

/* The device's place among its group's devices (HAMi's vdevice index is
 * the container's own device index), or 0 when the group is not known. */
static int vdev_of(const struct mon_model *m, const struct mon_proc *p)
{
	for (int i = 0; i < m->ngroups; i++) {
		if (strcmp(m->groups[i].name, p->group))
			continue;
		for (int j = 0; j < m->groups[i].ndev; j++)
			if (!strcmp(m->groups[i].dev[j].uuid, p->uuid))
				return j;
	}
	return 0;
}

/* The containers, one entry per (namespace, pod, container, device), in
 * that order. *n gets their number; NULL with *n 0 when there are none or
 * no memory (the host series are still written). */
static struct hami_ctr *containers(const struct mon_model *m, int *n)
{
	*n = 0;
	struct hami_ctr *v = calloc((size_t)m->nprocs + 1, sizeof(*v));
	if (!v)
		return NULL;
	int k = 0;
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		if (!(p->valid & MON_P_CAPPED) || p->state != MON_PROC_ALIVE ||
		    !p->pod_namespace[0] || !p->pod_name[0] || !p->uuid[0])
			continue;
		struct hami_ctr *c = &v[k++];
		c->first = p;
		ctr_label(p, c->ctr, sizeof(c->ctr));
		c->vdev = vdev_of(m, p);
		c->used = (p->valid & MON_P_ON_CARD) ? p->on_card : p->in_use;
		c->limit = p->cap == MON_NO_CAP ? 0 : p->cap;
		c->allocated = (p->valid & MON_P_ON_CARD) ? p->allocated : p->in_use;
		c->overhead = (p->valid & MON_P_ON_CARD) ? p->card_overhead : 0;
	}
	if (k > 1)
		qsort(v, (size_t)k, sizeof(*v), cmp_ctr);
	/* Processes of one container: their figures summed; the cap is the
	 * group's, the same for each (the largest, should two groups share
	 * one container). */
	int out = 0;
	for (int i = 0; i < k; i++) {
		if (out && !cmp_ctr(&v[out - 1], &v[i])) {
			struct hami_ctr *c = &v[out - 1];
			c->used += v[i].used;
			c->allocated += v[i].allocated;
			c->overhead += v[i].overhead;
			if (v[i].limit > c->limit)
				c->limit = v[i].limit;
			continue;
		}
		v[out++] = v[i];
	}
	*n = out;
	return v;
}

enum hami_ctr_metric { HC_USED, HC_LIMIT, HC_BUFFER, HC_CONTEXT };

static void ctr_series(FILE *f, const struct hami_ctr *v, int n, enum hami_ctr_metric which,
                       int legacy, const char *name, const char *help)
{
	if (!n)
		return;
	mon_prom_head(f, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		const struct hami_ctr *c = &v[i];
		if (which == HC_LIMIT && !c->limit)
			continue;
		char vdev[16];
		snprintf(vdev, sizeof(vdev), "%d", c->vdev);
		const struct mon_proc *p = c->first;
		const char *labels[] = {legacy ? "podnamespace" : "namespace",
		                        p->pod_namespace,
		                        legacy ? "podname" : "pod",
		                        p->pod_name,
		                        legacy ? "ctrname" : "container",
		                        c->ctr,
		                        legacy ? "vdeviceid" : "vdevice_index",
		                        vdev,
		                        legacy ? "deviceuuid" : "device_uuid",
		                        p->uuid,
		                        "zone",
		                        ZONE,
		                        NULL};
		uint64_t val = which == HC_USED     ? c->used
		               : which == HC_LIMIT  ? c->limit
		               : which == HC_BUFFER ? c->allocated
		                                    : c->overhead;
		mon_prom_sample(f, name, labels, val);
	}
}

static void host_series(FILE *f, const struct mon_model *m, const struct mon_hami_opts *o,
                        int legacy, const char *name, const char *help)
{
	int any = 0;
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *d = &m->devs[i];
		if (!(d->valid & MON_DEV_MEMORY) || !(d->valid & MON_DEV_INDEX))
			continue;
		if (!any)
			mon_prom_head(f, name, "gauge", help);
		any = 1;
		char idx[16], type[MON_NAME_MAX + 8];
		snprintf(idx, sizeof(idx), "%d", d->index);
		/* HAMi's device type: "NVIDIA-" and NVML's name. */
		snprintf(type, sizeof(type), "NVIDIA-%s", (d->valid & MON_DEV_NAME) ? d->name : "");
		const char *labels[] = {legacy ? "nodeid" : "node",
		                        o && o->node ? o->node : "",
		                        legacy ? "deviceidx" : "device_index",
		                        idx,
		                        legacy ? "deviceuuid" : "device_uuid",
		                        d->uuid,
		                        legacy ? "devicetype" : "device_type",
		                        (d->valid & MON_DEV_NAME) ? type : "",
		                        "zone",
		                        ZONE,
		                        NULL};
		mon_prom_sample(f, name, labels, d->used);
	}
}

int mon_format_hami(FILE *f, const struct mon_model *m, const struct mon_hami_opts *o)
{
	host_series(f, m, o, 0, "hami_host_gpu_memory_used_bytes",
	            "GPU device memory usage in bytes (vramctl: NVML's used memory).");
	host_series(f, m, o, 1, "HostGPUMemoryUsage",
	            "GPU device memory usage (vramctl: NVML's used memory; HAMi's legacy name).");
	int n;
	struct hami_ctr *v = containers(m, &n);
	ctr_series(f, v, n, HC_USED, 0, "hami_vgpu_memory_used_bytes",
	           "vGPU device memory usage in bytes (vramctl: what the card holds for the "
	           "container's capped processes, overhead included).");
	ctr_series(f, v, n, HC_LIMIT, 0, "hami_vgpu_memory_limit_bytes",
	           "vGPU device memory limit in bytes (vramctl: the group's cap).");
	ctr_series(f, v, n, HC_USED, 0, "hami_container_device_memory_bytes",
	           "Container device memory usage in bytes (vramctl: as "
	           "hami_vgpu_memory_used_bytes).");
	ctr_series(f, v, n, HC_CONTEXT, 0, "hami_vgpu_memory_context_bytes",
	           "Container device memory context size in bytes (vramctl: all its overhead: "
	           "contexts, modules, driver use).");
	ctr_series(f, v, n, HC_BUFFER, 0, "hami_vgpu_memory_buffer_bytes",
	           "Container device memory buffer size in bytes (vramctl: what it allocated).");
	ctr_series(f, v, n, HC_USED, 1, "vGPU_device_memory_usage_in_bytes",
	           "vGPU device usage (HAMi's legacy name of hami_vgpu_memory_used_bytes).");
	ctr_series(f, v, n, HC_LIMIT, 1, "vGPU_device_memory_limit_in_bytes",
	           "vGPU device limit (HAMi's legacy name of hami_vgpu_memory_limit_bytes).");
	free(v);
	return ferror(f) ? -EIO : 0;
}
