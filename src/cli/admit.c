/*
 * admit.c - a launcher's admission of its group's guarantees (admit.h).
 * What processes outside vramctl hold on a device is NVML's per-process
 * figure of every process that holds no line of the device's book; without
 * NVML it is not known, said, and counted as nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/admit.h"
#include "common/size.h"
#include "monitor/model.h"
#include "monitor/nvml.h"
#include "registry/devbook.h"

struct vr_devbook_proc *cli_admit_procs(const struct mon_model *m, const char *uuid, int *n)
{
	*n = -1;
	if (!(m->valid & MON_M_NVML))
		return NULL;
	struct vr_devbook_proc *p = calloc((size_t)m->nprocs + 1, sizeof *p);
	if (!p)
		return NULL;
	int k = 0;
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *q = &m->procs[i];
		if (!(q->valid & MON_P_DEVICE) || !(q->valid & MON_P_HOST_PID) ||
		    strcmp(m->devs[q->device].uuid, uuid) != 0)
			continue;
		p[k].pid = q->host_pid;
		p[k].bytes = (q->valid & MON_P_NVML_USED) ? q->nvml_used : 0;
		k++;
	}
	*n = k;
	return p;
}

static int admit_one(const struct vr_launch_dev *dv, uint64_t g, const char *group,
                     vr_member *member, const struct mon_model *m, struct vr_devbook **out)
{
	char err[512] = "";
	/* NULL: vr_devbook_dir's, whose refusal the open says. */
	int rc = vr_devbook_open(NULL, dv->raw, dv->total, out, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr,
		        "vramctl: --guarantee: GPU %d (%s): the device book cannot be used: %s\n",
		        dv->index, dv->uuid, err[0] ? err : strerror(-rc));
		return -1;
	}
	int n;
	struct vr_devbook_proc *procs = cli_admit_procs(m, dv->uuid, &n);
	struct vr_devbook_who who = {.group = group,
	                             .group_key = vr_group_key(member),
	                             .uid = (uint32_t)getuid(),
	                             .pid = (int32_t)getpid(),
	                             .guarantee = g,
	                             .procs = procs,
	                             .nprocs = n < 0 ? 0 : n};
	rc = vr_devbook_join(*out, &who, err, sizeof err);
	free(procs);
	if (rc == 0 && vr_devbook_guarantee(*out) != g) {
		char a[32], b[32];
		fprintf(
		    stderr,
		    "vramctl: --guarantee: GPU %d: group %s already holds a guarantee of %s there "
		    "(its first member's); it stays, not %s\n",
		    dv->index, group, vr_format_size(vr_devbook_guarantee(*out), a, sizeof a),
		    vr_format_size(g, b, sizeof b));
	}
	if (rc != 0) {
		fprintf(stderr, "vramctl: --guarantee: GPU %d (%s): %s; nothing started\n",
		        dv->index, dv->uuid, err);
		vr_devbook_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

int cli_admit(const struct vr_limits *gua, const struct vr_limits *lim,
              const struct vr_launch_dev *devs, int ndev, const char *group, vr_member *member,
              struct cli_admit *out)
{
	struct mon_model m;
	struct mon_nvml *nv = NULL;
	char err[256];
	memset(&m, 0, sizeof m);
	memset(out, 0, sizeof *out);
	if (mon_nvml_open(NULL, &nv, err, sizeof err) != 0 || mon_nvml_read(nv, &m) != 0)
		fprintf(stderr,
		        "vramctl: --guarantee: %s: what processes outside vramctl hold on each GPU "
		        "is not known, and counted as nothing\n",
		        nv ? "NVML's processes cannot be read" : err);
	int rc = 0;
	for (int i = 0; i < ndev && rc == 0; i++) {
		uint64_t g, cap;
		if (!vr_limits_cap_for(gua, devs[i].index, devs[i].uuid, devs[i].total, &g) || !g)
			continue;
		if (vr_limits_cap_for(lim, devs[i].index, devs[i].uuid, devs[i].total, &cap) &&
		    g > cap)
			g = cap;
		rc = admit_one(&devs[i], g, group, member, &m, &out->book[out->n]);
		if (rc == 0)
			out->n++;
	}
	mon_model_clear(&m);
	if (nv)
		mon_nvml_close(nv);
	if (rc != 0)
		cli_admit_release(out);
	return rc;
}

void cli_admit_release(struct cli_admit *a)
{
	for (int i = 0; i < a->n; i++)
		vr_devbook_close(a->book[i]);
	a->n = 0;
}
