/*
 * guarantee.c - guarantees on the card (guarantee.h; the device book:
 * registry/devbook.h; the design: docs/architecture.md, "Guarantees").
 *
 * A borrow (an allocation past the group's guarantee while some group has
 * a guarantee on the card) is decided under the device book's lock: the
 * card's free memory (NVML's, every process counted) less the other
 * groups' unused guarantees, less what other borrowers were granted in the
 * last moment and have not placed yet (their "pending" bytes, which the
 * card's free memory does not show yet). Its own bytes stay pending until
 * the block is placed (or briefly, when the driver fails), so two
 * borrowers never take the same room. A guaranteed group's bytes count in
 * its line of the book once they are on the card and stop counting before
 * they leave it: its unused guarantee is never shown smaller than it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/text.h"
#include "hook/books.h"
#include "hook/config.h"
#include "hook/guarantee.h"
#include "hook/log.h"
#include "hook/nvmlproc.h"
#include "registry/devbook.h"

const _Atomic uint64_t vr_gt_none;

/* NVML's processes on d, for the admission of a guarantee (outside
 * vramctl). *n = -1 when NVML cannot tell (then nothing is counted). */
static struct vr_devbook_proc *procs_of(const struct vr_dev *d, int *n)
{
	struct vr_nvml_proc *l = NULL;
	unsigned k = 0;
	nvmlReturn_t rc;
	*n = -1;
	if (vr_nvml_list(d->uuid_text, &l, &k, &rc) != NV_READY)
		return NULL;
	struct vr_devbook_proc *p = calloc(k ? k : 1, sizeof *p);
	if (p) {
		for (unsigned i = 0; i < k; i++) {
			p[i].pid = (int32_t)l[i].pid;
			p[i].bytes = l[i].used == NVML_VALUE_NOT_AVAILABLE ? 0 : l[i].used;
		}
		*n = (int)k;
	}
	free(l);
	return p;
}

void vr_gt_setup(struct vr_dev *d)
{
	d->gt.word = &vr_gt_none;
	if (d->cap == 0)
		return; /* fail closed: nothing is allocated to borrow */
	uint64_t asked = vr_config_guarantee(d->ordinal, d->uuid_text, d->phys_total, d->cap);
	char err[512] = "", a[32];
	struct vr_devbook *b = NULL;
	/* NULL: vr_devbook_dir's, whose refusal (a relative one) the open says. */
	int rc = vr_devbook_open(NULL, d->uuid, d->phys_total, &b, err, sizeof err);
	if (rc != 0) {
		vr_log(asked ? VR_LOG_ERROR : VR_LOG_WARN,
		       "GPU %d: the device book (guarantees) cannot be used: %s; %s", d->ordinal,
		       err[0] ? err : strerror(-rc),
		       asked ? "this process's guarantee cannot be given (it runs under its cap, "
		               "borrowing unchecked)"
		             : "other groups' guarantees are not seen by this process (its cap "
		               "holds)");
		return;
	}
	int nprocs = -1;
	struct vr_devbook_proc *procs = asked ? procs_of(d, &nprocs) : NULL;
	struct vr_devbook_who who = {
	    .group = vr_books_group(),
	    .group_key = vr_books_group_key(),
	    .uid = (uint32_t)getuid(),
	    .pid = (int32_t)vr_nvml_host_pid(NULL),
	    .guarantee = asked,
	    .procs = procs,
	    .nprocs = nprocs < 0 ? 0 : nprocs,
	};
	if (asked && !who.group_key) {
		vr_log(VR_LOG_ERROR,
		       "GPU %d: a guarantee of %s needs the group's books, which this process "
		       "could not join: it borrows like a process without one",
		       d->ordinal, vr_format_size(asked, a, sizeof a));
		who.guarantee = asked = 0;
	}
	rc = vr_devbook_join(b, &who, err, sizeof err);
	if (rc == -ENOSPC && asked) {
		vr_log(VR_LOG_ERROR,
		       "GPU %d: the guarantee of %s cannot be given: %s; this process borrows "
		       "like a group without one",
		       d->ordinal, vr_format_size(asked, a, sizeof a), err);
		who.guarantee = 0;
		rc = vr_devbook_join(b, &who, err, sizeof err);
	}
	free(procs);
	if (rc != 0) {
		vr_log(VR_LOG_WARN,
		       "GPU %d: the device book (guarantees) cannot be used: %s; other groups' "
		       "guarantees are not seen by this process (its cap holds)",
		       d->ordinal, err[0] ? err : strerror(-rc));
		vr_devbook_close(b);
		return;
	}
	d->gt.book = b;
	d->gt.guarantee = vr_devbook_guarantee(b);
	if (d->gt.guarantee)
		atomic_fetch_or(&d->gt.flags, VR_GT_MIRROR);
	if (asked && d->gt.guarantee != asked) {
		char g[32];
		vr_log(VR_LOG_WARN,
		       "GPU %d: the group's guarantee here is %s (its first member's), not %s",
		       d->ordinal, vr_format_size(d->gt.guarantee, g, sizeof g),
		       vr_format_size(asked, a, sizeof a));
	}
	d->gt.word = vr_devbook_guaranteed_word(b);
}

/* This thread's last refusal of a borrow, for the denial line. */
static __thread struct refusal {
	const struct vr_dev *d;
	uint64_t use, card_free, unused, pending;
	struct vr_devbook_holder top;
	const char *why; /* NULL: the guarantees; else what could not be checked */
} last;

static int refuse(struct vr_dev *d, uint64_t bytes, const struct refusal *r)
{
	vr_books_release(d, bytes);
	last = *r;
	last.d = d;
	return -1;
}

/* The group's guarantee on d as its book holds it now (`vramctl limit`
 * may have lowered or raised it since the setup). */
static uint64_t guarantee_now(const struct vr_dev *d)
{
	return d->gt.book ? vr_devbook_guarantee_now(d->gt.book) : d->gt.guarantee;
}

int vr__gt_borrow(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	struct vr_devbook *b = d->gt.book;
	uint64_t use = *in_use ? *in_use : vr_books_in_use(d);
	uint64_t g = guarantee_now(d);
	if (!b || (g && use <= g))
		return 0;
	struct refusal r = {.use = use};
	int rc = vr_devbook_lock(b);
	if (rc != 0) {
		r.why = rc == -ETIMEDOUT ? "the device book stayed locked by another process"
		                         : "the device book is damaged";
		return refuse(d, bytes, &r);
	}
	r.unused = vr_devbook_unused_others(b, &r.top);
	if (r.unused == 0) {
		vr_devbook_unlock(b);
		return 0;
	}
	if (r.unused == UINT64_MAX) { /* damage: nothing is lent */
		vr_devbook_unlock(b);
		r.why = "the device book is damaged";
		return refuse(d, bytes, &r);
	}
	if (vr_nvml_free(d->uuid_text, &r.card_free) != NV_READY) {
		vr_devbook_unlock(b);
		r.why = "NVML cannot tell the card's free memory";
		return refuse(d, bytes, &r);
	}
	r.pending = vr_devbook_pending_others(b);
	uint64_t held = r.unused + r.pending < r.unused ? UINT64_MAX : r.unused + r.pending;
	if (r.card_free > held && bytes <= r.card_free - held) {
		vr_devbook_pending(b, (int64_t)bytes);
		atomic_fetch_or_explicit(&d->gt.flags, VR_GT_PENDING, memory_order_relaxed);
		vr_devbook_unlock(b);
		return 0;
	}
	vr_devbook_unlock(b);
	return refuse(d, bytes, &r);
}

int vr_gt_view(struct vr_dev *d, uint64_t *freep)
{
	struct vr_devbook *b = d->gt.book;
	if (!b || atomic_load_explicit(d->gt.word, memory_order_relaxed) == 0)
		return 0;
	uint64_t use = vr_books_in_use(d), room = 0, unused, card_free, pending;
	uint64_t g = guarantee_now(d), own = g > use ? g - use : 0;
	struct vr_devbook_holder top;
	if (own >= *freep)
		return 1;
	if (vr_devbook_lock(b) != 0) {
		*freep = own; /* a borrow would be refused: the lock stays held */
		return 1;
	}
	unused = vr_devbook_unused_others(b, &top);
	int known = unused != UINT64_MAX && vr_nvml_free(d->uuid_text, &card_free) == NV_READY;
	pending = known ? vr_devbook_pending_others(b) : 0;
	vr_devbook_unlock(b);
	if (unused == 0)
		return 1;
	if (known) {
		uint64_t held = unused + pending < unused ? UINT64_MAX : unused + pending;
		room = card_free > held ? card_free - held : 0;
	}
	if (own > room)
		room = own;
	if (room < *freep)
		*freep = room;
	return 1;
}

void vr__gt_placed(struct vr_dev *d, uint64_t bytes)
{
	if (!d->gt.book)
		return;
	unsigned f = atomic_fetch_and_explicit(&d->gt.flags, ~VR_GT_PENDING, memory_order_relaxed);
	if (f & VR_GT_PENDING)
		vr_devbook_pending(d->gt.book, -(int64_t)bytes);
	if (f & VR_GT_MIRROR)
		vr_devbook_held(d->gt.book, (int64_t)bytes);
}

void vr__gt_leaving(struct vr_dev *d, uint64_t bytes)
{
	if (d->gt.book)
		vr_devbook_held(d->gt.book, -(int64_t)bytes);
}

void vr_gt_overhead(struct vr_dev *d, int64_t delta)
{
	if (d->gt.book && (atomic_load_explicit(&d->gt.flags, memory_order_relaxed) & VR_GT_MIRROR))
		vr_devbook_held(d->gt.book, delta);
}

void vr_gt_forget(struct vr_dev *d)
{
	if (d->gt.book)
		vr_devbook_forget(d->gt.book);
	d->gt.book = NULL;
	d->gt.word = &vr_gt_none;
	d->gt.guarantee = 0;
	atomic_store(&d->gt.flags, 0);
}

int vr_gt_refused(const struct vr_dev *d)
{
	return last.d == d;
}

void vr_gt_say_denied(const struct vr_dev *d, uint64_t bytes)
{
	struct refusal r = last;
	char more[64], a[32], b[32], c[32], e[32], f[32], g[32], h[32], who[160] = "";
	last.d = NULL;
	if (!vr_log_denial_gate(more, sizeof more))
		return;
	uint64_t cap = d->cap;
	/* What the group holds without the request (r.use counts it: the
	 * books had granted it when it was checked). */
	uint64_t held = r.use > bytes ? r.use - bytes : 0;
	uint64_t mine_g = guarantee_now(d);
	const uint64_t sizes[] = {bytes,       held,     cap,       mine_g,
	                          r.card_free, r.unused, r.pending, r.top.guarantee,
	                          r.top.held};
	int dg = vr_size_digits(sizes, 9, 0);
	char mine[160];
	snprintf(mine, sizeof mine, "this group: cap %s, %s guaranteed, %s in use",
	         vr_dev_capped(d) ? vr_format_size_digits(cap, dg, a, sizeof a) : "none",
	         vr_format_size_digits(mine_g, dg, b, sizeof b),
	         vr_format_size_digits(held, dg, c, sizeof c));
	if (r.why) {
		vr__log(VR_LOG_WARN,
		        "denied %s on GPU %d: past this group's guarantee, and %s: a borrow "
		        "cannot be checked against other groups' guarantees (%s)%s",
		        vr_format_size_digits(bytes, dg, e, sizeof e), d->ordinal, r.why, mine,
		        more);
		return;
	}
	char name[96];
	vr_text_escape(name, sizeof name, r.top.group);
	snprintf(who, sizeof who,
	         "group '%s' (uid %u, pid %d) holds a guarantee of %s, %s of it in use", name,
	         (unsigned)r.top.uid, (int)r.top.pid,
	         vr_format_size_digits(r.top.guarantee, dg, f, sizeof f),
	         vr_format_size_digits(r.top.held, dg, g, sizeof g));
	/* Two figures side by side, never one "of" the other: unused
	 * guarantees may be more than the card has free (borrowers took it
	 * before they were given). */
	char pend[96] = "";
	if (r.pending)
		snprintf(pend, sizeof pend, ", and %s was granted to other borrowers a moment ago",
		         vr_format_size_digits(r.pending, dg, a, sizeof a));
	vr__log(VR_LOG_WARN,
	        "denied %s on GPU %d: the card's free memory is guaranteed to other groups: %s; "
	        "the card has %s free, other groups' unused guarantees are %s%s (%s); nothing "
	        "is killed: allocations pass again once the card has room outside the "
	        "guarantees%s",
	        vr_format_size_digits(bytes, dg, e, sizeof e), d->ordinal, who,
	        vr_format_size_digits(r.card_free, dg, c, sizeof c),
	        vr_format_size_digits(r.unused, dg, h, sizeof h), pend, mine, more);
}
