/*
 * model.c - the model's own housekeeping: clear, copy, notes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"
#include "monitor/model.h"

void mon_model_clear(struct mon_model *m)
{
	free(m->devs);
	free(m->groups);
	free(m->procs);
	free(m->alone);
	memset(m, 0, sizeof(*m));
}

void mon_model_note(struct mon_model *m, const char *fmt, ...)
{
	if (m->nnotes >= MON_MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->notes[m->nnotes], MON_NOTE_LEN, fmt, ap);
	va_end(ap);
	/* The same sentence twice (one per GPU, say) says nothing new. */
	for (int i = 0; i < m->nnotes; i++)
		if (!strcmp(m->notes[i], m->notes[m->nnotes]))
			return;
	m->nnotes++;
}

int mon_model_copy(struct mon_model *dst, const struct mon_model *src)
{
	*dst = *src;
	dst->devs = NULL;
	dst->groups = NULL;
	dst->procs = NULL;
	dst->alone = NULL;
	if (src->nalone) {
		dst->alone = malloc(sizeof(*dst->alone) * (size_t)src->nalone);
		if (!dst->alone)
			goto oom;
		memcpy(dst->alone, src->alone, sizeof(*dst->alone) * (size_t)src->nalone);
	}
	if (src->ndevs) {
		dst->devs = malloc(sizeof(*dst->devs) * (size_t)src->ndevs);
		if (!dst->devs)
			goto oom;
		memcpy(dst->devs, src->devs, sizeof(*dst->devs) * (size_t)src->ndevs);
	}
	if (src->ngroups) {
		dst->groups = malloc(sizeof(*dst->groups) * (size_t)src->ngroups);
		if (!dst->groups)
			goto oom;
		memcpy(dst->groups, src->groups, sizeof(*dst->groups) * (size_t)src->ngroups);
	}
	if (src->nprocs) {
		dst->procs = malloc(sizeof(*dst->procs) * (size_t)src->nprocs);
		if (!dst->procs)
			goto oom;
		memcpy(dst->procs, src->procs, sizeof(*dst->procs) * (size_t)src->nprocs);
	}
	return 0;
oom:
	mon_model_clear(dst);
	return -ENOMEM;
}

int mon_model_gpu_index(const struct mon_model *m, int device, int known)
{
	if (!known || device < 0 || device >= m->ndevs)
		return -1;
	if (!(m->devs[device].valid & MON_DEV_INDEX))
		return -1;
	return m->devs[device].index;
}

const char *mon_enforcer_name(const struct mon_proc *p)
{
	int lib = !!(p->valid & MON_P_CAPPED), drv = !!(p->valid & MON_P_DRVLIMIT);
	return lib && drv ? "both" : lib ? "library" : drv ? "driver" : "none";
}

char *mon_drv_text(const struct mon_proc *p, char *buf, size_t len)
{
	char h[32], u[32];
	if (!(p->valid & MON_P_DRVLIMIT))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s (%s used, %s)", vr_format_size(p->drv.hard, h, sizeof(h)),
		         vr_format_size(p->drv.used, u, sizeof(u)), p->drv.cgroup);
	return buf;
}

int mon_drv_any(const struct mon_model *m)
{
	for (int i = 0; i < m->nprocs; i++)
		if (m->procs[i].valid & MON_P_DRVLIMIT)
			return 1;
	return 0;
}
