/*
 * outer.c - the outer groups this process holds beside its own (outer.h).
 * Only processes inside a job whose group is not their own have any: for
 * every other process d->nouter is 0 and none of this runs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/text.h"
#include "hook/hook.h"
#include "hook/job.h"
#include "hook/outer.h"

/* An outer group: its membership (NULL: kept by this process alone). */
static struct grp {
	vr_member *m;
	const struct vr_outer_job *job;
	struct vr_limits lim;
	int bad; /* its cap cannot be read: 0 on every device (fail closed) */
} grp[VR_OUTER_MAX];
static int ngrp;

/* Per device (by ordinal) and outer group: its index in the group's books
 * (-1: this process's own count, `local`, against `cap`). Written when the
 * device is set up, before it is ready (devices.c orders the rest). */
static struct od {
	int reg[VR_OUTER_MAX];
	uint64_t cap[VR_OUTER_MAX];
	_Atomic uint64_t local[VR_OUTER_MAX];
	_Atomic uint64_t overhead[VR_OUTER_MAX];
} od[VR_MAX_DEVICES];

/* The last refusal of this thread: 0 its own group's, else k + 1. */
static __thread int refused_by;

static void outer_damaged(const char *line)
{
	vr_log(VR_LOG_ERROR, "a job's group: %s", line);
}

void vr_outer_join(void)
{
	const struct vr_outer_job *jobs;
	int n = vr_job_outers(&jobs);
	for (int k = 0; k < n; k++) {
		struct grp *g = &grp[k];
		const struct vr_outer_job *j = &jobs[k];
		char err[256] = "";
		g->job = j;
		g->bad = vr_parse_limits(j->limit, &g->lim, NULL, 0) != 0;
		struct vr_join_opts o = {
		    .dir = j->dir,
		    .group = j->group,
		    .limit_spec = j->limit,
		    .notice = outer_damaged,
		    .as_owner = j->owner != (uint32_t)geteuid(),
		    .owner = j->owner,
		};
		int rc;
		VR_OWN(rc = vr_join(&o, &g->m, NULL, err, sizeof err));
		if (rc != 0) {
			g->m = NULL;
			vr_log(VR_LOG_ERROR,
			       "cannot join group %s of the %s this process is in: %s; its cap "
			       "there (%s) holds for this process alone",
			       j->group, j->what, err[0] ? err : strerror(-rc), j->limit);
		}
	}
	ngrp = n;
}

void vr_outer_device(struct vr_dev *d)
{
	if (!ngrp || d->ordinal < 0 || d->ordinal >= VR_MAX_DEVICES)
		return;
	struct od *o = &od[d->ordinal];
	for (int k = 0; k < ngrp; k++) {
		struct grp *g = &grp[k];
		uint64_t want = UINT64_MAX, cap;
		if (g->bad)
			want = 0;
		else if (!vr_limits_cap_for(&g->lim, d->ordinal, d->uuid_text, d->phys_total,
		                            &want))
			want = UINT64_MAX;
		o->reg[k] = -1;
		o->cap[k] = want;
		if (g->m) {
			int idx;
			VR_OWN(idx = vr_device(g->m, d->uuid, want, &cap));
			if (idx >= 0) {
				o->reg[k] = idx;
				o->cap[k] = cap;
			}
		}
		uint64_t own = atomic_load(&d->cap);
		if (o->cap[k] != UINT64_MAX && o->cap[k] < own) {
			char a[32], b[32];
			int dg = vr_size_digits((uint64_t[]){o->cap[k], own}, 2, 0);
			vr_log(VR_LOG_WARN,
			       "GPU %d: this process is inside group %s (%s, cap %s there): the "
			       "cap of %s it was given cannot be passed; the %s's holds as well",
			       d->ordinal, g->job->group, g->job->what,
			       vr_format_size_digits(o->cap[k], dg, a, sizeof a),
			       own == UINT64_MAX ? "none"
			                         : vr_format_size_digits(own, dg, b, sizeof b),
			       g->job->what);
		}
	}
	d->nouter = ngrp;
}

/* This process's own count of outer group k on d: 0, or -1 when bytes
 * more would pass its cap. */
static int local_take(struct od *o, int k, uint64_t bytes, uint64_t *in_use)
{
	uint64_t cur = atomic_load_explicit(&o->local[k], memory_order_relaxed);
	for (;;) {
		if (o->cap[k] != UINT64_MAX && (bytes > o->cap[k] || cur > o->cap[k] - bytes)) {
			*in_use = cur;
			return -1;
		}
		if (atomic_compare_exchange_weak_explicit(&o->local[k], &cur, cur + bytes,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed))
			return 0;
	}
}

static void give_back(struct od *o, int k, uint64_t bytes)
{
	if (o->reg[k] >= 0)
		vr_release(grp[k].m, o->reg[k], bytes);
	else
		atomic_fetch_sub_explicit(&o->local[k], bytes, memory_order_relaxed);
}

int vr__outer_reserve(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int quiet)
{
	struct od *o = &od[d->ordinal];
	for (int k = 0; k < d->nouter; k++) {
		uint64_t used = 0;
		int rc;
		if (o->reg[k] >= 0)
			rc = quiet ? vr_reserve_quiet(grp[k].m, o->reg[k], bytes, &used)
			           : vr_reserve(grp[k].m, o->reg[k], bytes, &used);
		else
			rc = local_take(o, k, bytes, &used);
		if (rc != 0) {
			if (o->reg[k] >= 0 && rc != -ENOSPC)
				vr_usage(grp[k].m, o->reg[k], &used, NULL);
			refused_by = k + 1;
			while (k-- > 0)
				give_back(o, k, bytes);
			*in_use = used;
			return -1;
		}
	}
	return 0;
}

void vr__outer_release(struct vr_dev *d, uint64_t bytes)
{
	struct od *o = &od[d->ordinal];
	for (int k = 0; k < d->nouter; k++)
		give_back(o, k, bytes);
}

void vr_outer_overhead(struct vr_dev *d, uint64_t bytes)
{
	struct od *o = &od[d->ordinal];
	for (int k = 0; k < d->nouter; k++) {
		uint64_t was = atomic_exchange(&o->overhead[k], bytes);
		if (o->reg[k] >= 0)
			vr_overhead_set(grp[k].m, o->reg[k], bytes, NULL);
		else if (bytes > was)
			atomic_fetch_add(&o->local[k], bytes - was);
		else
			atomic_fetch_sub(&o->local[k], was - bytes);
	}
}

/* Outer group k's cap on d and its use there now. */
static void usage(struct vr_dev *d, int k, uint64_t *in_use, uint64_t *cap)
{
	struct od *o = &od[d->ordinal];
	*cap = o->cap[k];
	if (o->reg[k] >= 0)
		vr_usage(grp[k].m, o->reg[k], in_use, cap);
	else
		*in_use = atomic_load_explicit(&o->local[k], memory_order_relaxed);
}

void vr_outer_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp)
{
	for (int k = 0; k < d->nouter; k++) {
		uint64_t in_use = 0, cap = UINT64_MAX;
		usage(d, k, &in_use, &cap);
		if (cap == UINT64_MAX)
			continue;
		uint64_t room = in_use < cap ? cap - in_use : 0;
		if (*totalp > cap)
			*totalp = cap;
		if (*freep > room)
			*freep = room;
	}
	if (*freep > *totalp)
		*freep = *totalp;
}

uint64_t vr_outer_total(struct vr_dev *d, uint64_t total)
{
	uint64_t f = total;
	vr_outer_view(d, &f, &total);
	return total;
}

int vr_outer_refused(const struct vr_dev *d)
{
	return refused_by > 0 && refused_by <= d->nouter;
}

void vr_outer_refusal_own(void)
{
	refused_by = 0;
}

int vr_outer_say_refused(struct vr_dev *d, uint64_t bytes, uint64_t in_use)
{
	int k = refused_by - 1;
	refused_by = 0;
	if (k < 0 || k >= d->nouter)
		return 0;
	char more[64], a[32], b[32], c[32], e[32];
	if (!vr_log_denial_gate(more, sizeof more))
		return 1;
	uint64_t used = 0, cap = UINT64_MAX, own = atomic_load(&d->cap);
	usage(d, k, &used, &cap);
	if (in_use < used)
		in_use = used;
	int dg = vr_size_digits((uint64_t[]){bytes, cap, in_use, own}, 4, 1);
	vr__log(VR_LOG_WARN,
	        "denied %s on GPU %d: the %s this process is in holds it (group %s: cap %s, %s "
	        "in use%s); this process's own cap there is %s%s",
	        vr_format_size_digits(bytes, dg, a, sizeof a), d->ordinal, grp[k].job->what,
	        grp[k].job->group, vr_format_size_digits(cap, dg, b, sizeof b),
	        vr_format_size_digits(in_use, dg, c, sizeof c),
	        grp[k].m ? "" : ", counted by this process alone",
	        own == UINT64_MAX ? "none" : vr_format_size_digits(own, dg, e, sizeof e), more);
	return 1;
}

static void outer_atfork_child(void)
{
	for (int k = 0; k < ngrp; k++)
		vr_forget(grp[k].m);
	memset(grp, 0, sizeof grp);
	memset(od, 0, sizeof od);
	ngrp = 0;
}
VR_ATFORK_CHILD(outer_atfork_child);
