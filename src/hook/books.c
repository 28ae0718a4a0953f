/*
 * books.c - the one books interface of the library, with two backends:
 *
 *   the group registry (src/registry): shared by every process of the group,
 *     so the sum of live allocations of the whole job stays under the cap;
 *   per-process books: used when the group cannot be joined (a corrupt or
 *     foreign region, a full directory, permissions...). The cap then holds
 *     for this process alone; this is said once on stderr.
 *
 * Callers reserve before the driver call and release when the driver fails
 * or the memory is freed, so the books never run behind the driver.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/spill.h"
#include "common/text.h"
#include "hook/books.h"
#include "hook/job.h"
#include "hook/outer.h"
#include "hook/record.h"
#include "hook/teardown.h"
#include "registry/caps.h"
#include "registry/own.h"
#include "registry/proc.h"
#include "registry/registry.h"

/*
 * The membership is written once, under join_lock, before `joined` is set
 * (release); readers that find `joined` set (acquire) see it without the
 * lock. Devices are added after the join (their ready flag orders the rest).
 */
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int joined;
vr_member *vr__books_member;
static char private_group[72];
static _Atomic int64_t local_pinned;
static _Atomic uint64_t local_spilled; /* per-process books' spill */
/* Per-process books shown to monitors (registry/own.h): the record, its
 * memfd, and why this process keeps books of its own (the first reason). */
static struct vr_own *own;
static int own_fd = -1;
static char own_why[VR_OWN_WHY];
_Atomic uint64_t vr__books_spill_budget; /* in force: the group's, else VRAMCTL_SPILL's */

/* The registry found the group's books damaged: said once, by the member
 * that found it; it keeps its own books under the caps it joined with. */
static void books_damaged(const char *line)
{
	vr_log(VR_LOG_ERROR, "group %s: %s", vr_g.group[0] ? vr_g.group : private_group, line);
}

static void join_locked(void)
{
	const char *group = vr_g.group;
	int fresh = 0;
	if (!group[0] && vr_job_container_group(private_group, sizeof private_group) == 0) {
		group = private_group;
	} else if (!group[0]) {
		/* A cap but no group (a hand-set environment): a group of one. */
		snprintf(private_group, sizeof private_group, "pid-%ld", (long)getpid());
		group = private_group;
		fresh = 1;
	}
	struct vr_join_opts o = {
	    .dir = vr_g.registry_dir[0] ? vr_g.registry_dir : NULL,
	    .group = group,
	    .limit_spec = vr_g.limit_text,
	    .growth = vr_g.growth,
	    .fresh = fresh,
	    .notice = books_damaged,
	    .spill_budget = vr_g.spill_asked,
	    .park_budget = vr_g.park_budget_asked,
	    .waits = vr_g.wait_ms != 0,
	    .lanes = 1,
	};
	o.as_owner = vr_job_owner(&o.owner);
	char err[256] = "";
	int differs = 0, rc;
	vr_teardown_setup(); /* a join may reclaim a dead member's share */
	vr_member *got = NULL;
	VR_OWN(rc = vr_join(&o, &got, &differs, err, sizeof err));
	atomic_store(&vr__books_spill_budget, vr_g.spill_asked);
	/* Published whole: the park agent may read it from its thread. */
	__atomic_store_n(&vr__books_member, rc == 0 ? got : NULL, __ATOMIC_RELEASE);
	if (rc != 0) {
		snprintf(own_why, sizeof own_why, "cannot join group %s: %s", group,
		         err[0] ? err : strerror(-rc));
		vr_log(VR_LOG_ERROR,
		       "%s; this process keeps its own books (the cap applies to it "
		       "alone)",
		       own_why);
		return;
	}
	char note[768];
	if (differs)
		vr_log(VR_LOG_WARN, "%s",
		       vr_cap_differs_note(note, sizeof note, group, vr_g.limit_text));
	uint64_t budget = vr_spill_budget(vr__books_member);
	atomic_store(&vr__books_spill_budget, budget);
	if (budget != vr_g.spill_asked)
		vr_log(VR_LOG_WARN, "%s",
		       vr_spill_differs_note(note, sizeof note, group, budget, vr_g.spill_asked));
}

/* Joins the group once per process (thread-safe; later calls return at once). */
static void join(void)
{
	if (VR_LIKELY(atomic_load_explicit(&joined, memory_order_acquire)))
		return;
	VR_OWN(pthread_mutex_lock(&join_lock));
	if (!atomic_load_explicit(&joined, memory_order_relaxed)) {
		join_locked();
		vr_outer_join();
		vr_rec_open();
		atomic_store_explicit(&joined, 1, memory_order_release);
	}
	pthread_mutex_unlock(&join_lock);
}

void vr_books_device(struct vr_dev *d, uint64_t cap_if_new)
{
	join();
	d->reg = -1;
	d->cap = cap_if_new;
	if (vr__books_member) {
		uint64_t cap = cap_if_new;
		int idx = vr_device(vr__books_member, d->uuid, cap_if_new, &cap);
		if (idx >= 0) {
			d->reg = idx;
			d->cap = cap;
		} else if (idx == -EPERM) {
			char a[32], gpu[80];
			vr_gpu_label(gpu, sizeof gpu, d->ordinal, d->uuid_text,
			             getenv("CUDA_VISIBLE_DEVICES") != NULL);
			vr_log(
			    VR_LOG_ERROR,
			    "the group leaves %s uncapped and this process asks for a cap of "
			    "%s there: that cap holds for this process alone (its own books; its "
			    "bytes there are not in the group's)",
			    gpu, vr_format_size(cap_if_new, a, sizeof(a)));
			if (!own_why[0])
				snprintf(
				    own_why, sizeof own_why,
				    "group %s leaves %s uncapped and this process asks for a cap "
				    "there",
				    vr_g.group[0] ? vr_g.group : private_group, d->uuid_text);
		} else {
			vr_log(VR_LOG_ERROR,
			       "cannot add GPU %d to the group's books: %s; this process keeps its "
			       "own books for it",
			       d->ordinal, strerror(-idx));
			if (!own_why[0])
				snprintf(own_why, sizeof own_why,
				         "cannot add %s to group %s's books: %s", d->uuid_text,
				         vr_g.group[0] ? vr_g.group : private_group,
				         strerror(-idx));
		}
	}
	vr_outer_device(d);
}

/* Per device (by ordinal): the cap before `vramctl limit` last lowered it
 * (0: not lowered since this process took it), for what the program is
 * told when it meets the lower cap (vr_books_cap_lowered). */
static _Atomic uint64_t cap_before[VR_MAX_DEVICES];

int vr_books_cap_sync(struct vr_dev *d)
{
	if (d->reg < 0 || !vr__books_member)
		return 0;
	uint64_t cap = UINT64_MAX, was = atomic_load(&d->cap);
	vr_usage(vr__books_member, d->reg, NULL, &cap);
	if (cap == was || vr_damaged(vr__books_member) ||
	    !atomic_compare_exchange_strong(&d->cap, &was, cap))
		return 0;
	char a[32], b[32];
	int dg = vr_size_digits((uint64_t[]){was, cap}, 2, 0);
	if (d->ordinal >= 0 && d->ordinal < VR_MAX_DEVICES)
		atomic_store(&cap_before[d->ordinal], cap < was ? was : 0);
	/* A lower cap refuses what the program may count on: said at the
	 * default level; a raise only where asked. */
	vr_log(cap < was ? VR_LOG_WARN : VR_LOG_INFO,
	       "GPU %d: the group's cap was changed from %s to %s (vramctl limit)", d->ordinal,
	       was == UINT64_MAX ? "none" : vr_format_size_digits(was, dg, a, sizeof a),
	       vr_format_size_digits(cap, dg, b, sizeof b));
	vr_rec_device(d); /* the report's cap in force */
	return 1;
}

uint64_t vr_books_cap_lowered(const struct vr_dev *d)
{
	return d->ordinal >= 0 && d->ordinal < VR_MAX_DEVICES ? atomic_load(&cap_before[d->ordinal])
	                                                      : 0;
}

const char *vr_books_group(void)
{
	join();
	return !vr__books_member ? "" : vr_g.group[0] ? vr_g.group : private_group;
}

uint64_t vr_books_group_key(void)
{
	join();
	return vr_group_key(vr__books_member);
}

int vr_books_changed_spec(char *spec, size_t len)
{
	join();
	return vr__books_member && vr_caps_changed(vr__books_member, spec, len) > 0;
}

int vr__books_reserve_outer(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int quiet)
{
	if (vr__outer_reserve(d, bytes, in_use, quiet) == 0)
		return 0;
	vr__books_release_own(d, bytes);
	return -1;
}

int vr__books_reserve_other(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int rc, int quiet)
{
	vr_outer_refusal_own(); /* a refusal from here on is its own group's */
	if (d->reg >= 0) {
		if (rc != -ENOSPC) { /* the registry failed: refuse, never pass the cap */
			uint64_t cap;
			vr_usage(vr__books_member, d->reg, in_use, &cap);
		}
		return -1;
	}
	uint64_t cur = atomic_load_explicit(&d->local_in_use, memory_order_relaxed);
	for (;;) {
		if (vr_dev_capped(d) && (bytes > d->cap || cur > d->cap - bytes))
			break;
		if (atomic_compare_exchange_weak_explicit(&d->local_in_use, &cur, cur + bytes,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed)) {
			vr__books_own_note(d, cur + bytes);
			return d->nouter ? vr__books_reserve_outer(d, bytes, in_use, quiet) : 0;
		}
	}
	*in_use = cur;
	return -1;
}

void vr__books_own_note(struct vr_dev *d, uint64_t in_use)
{
	struct vr_own_dev *o = d->own;
	if (!o)
		return;
	atomic_store_explicit((_Atomic uint64_t *)&o->in_use, in_use, memory_order_relaxed);
	_Atomic uint64_t *peak = (_Atomic uint64_t *)&o->peak;
	uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
	while (p < in_use && !atomic_compare_exchange_weak_explicit(
	                         peak, &p, in_use, memory_order_relaxed, memory_order_relaxed))
		;
}

void vr_books_own(struct vr_dev *d)
{
	if (d->reg >= 0 || !vr_dev_capped(d) || d->own)
		return;
	VR_OWN(pthread_mutex_lock(&join_lock));
	if (!own) {
		const char *group = vr_g.group[0] ? vr_g.group : private_group;
		own = vr_own_publish(
		    group, own_why[0] ? own_why : "its group's cap is above the site's maximum",
		    &own_fd);
	}
	if (own)
		d->own = vr_own_device(own, d->uuid, atomic_load(&d->cap));
	pthread_mutex_unlock(&join_lock);
	vr__books_own_note(d, atomic_load_explicit(&d->local_in_use, memory_order_relaxed));
}

void vr_books_denied(struct vr_dev *d, uint64_t bytes)
{
	if (d->reg >= 0)
		vr_note_denied(vr__books_member, d->reg, bytes);
}

int vr_books_spill(struct vr_dev *d, uint64_t bytes, uint64_t *spilled, uint64_t *budget)
{
	if (d->reg >= 0)
		return vr_spill_reserve(vr__books_member, d->reg, bytes, spilled, budget) == 0 ? 0
		                                                                               : -1;
	uint64_t b = vr_g.spill_asked;
	uint64_t cur = atomic_load_explicit(&local_spilled, memory_order_relaxed);
	*budget = b;
	for (;;) {
		*spilled = cur;
		if (bytes > b || cur > b - bytes)
			return -1;
		if (atomic_compare_exchange_weak_explicit(&local_spilled, &cur, cur + bytes,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed)) {
			*spilled = cur + bytes;
			return 0;
		}
	}
}

void vr_books_unspill(struct vr_dev *d, uint64_t bytes)
{
	if (d->reg >= 0)
		vr_spill_release(vr__books_member, d->reg, bytes);
	else
		atomic_fetch_sub_explicit(&local_spilled, bytes, memory_order_relaxed);
}

uint64_t vr_books_in_use(struct vr_dev *d)
{
	if (d->reg >= 0) {
		uint64_t in_use = 0, cap = 0;
		vr_usage(vr__books_member, d->reg, &in_use, &cap);
		return in_use;
	}
	return atomic_load_explicit(&d->local_in_use, memory_order_relaxed);
}

int vr_books_holders(const struct vr_dev *d, uint64_t *self, uint64_t *peak, struct vr_holder *out,
                     int n)
{
	*self = *peak = 0;
	if (d->reg >= 0 && vr__books_member) {
		int got;
		VR_OWN(got = vr_holders(vr__books_member, d->reg, self, peak, out, n));
		if (got >= 0)
			return got;
	}
	*self = atomic_load_explicit(&((struct vr_dev *)d)->local_in_use, memory_order_relaxed);
	return 0;
}

uint64_t vr_books_held(struct vr_dev *d)
{
	if (d->reg >= 0)
		return vr_mine(vr__books_member, d->reg);
	return atomic_load_explicit(&d->local_in_use, memory_order_relaxed);
}

void vr_books_overhead(struct vr_dev *d, uint64_t bytes)
{
	uint64_t was = atomic_load_explicit(&d->card.overhead, memory_order_relaxed);
	if (d->reg >= 0) {
		if (vr_overhead_set(vr__books_member, d->reg, bytes, NULL) != 0)
			return;
	} else {
		if (d->own)
			atomic_store_explicit((_Atomic uint64_t *)&d->own->overhead, bytes,
			                      memory_order_relaxed);
		uint64_t now = bytes > was
		                   ? atomic_fetch_add_explicit(&d->local_in_use, bytes - was,
		                                               memory_order_relaxed) +
		                         (bytes - was)
		                   : atomic_fetch_sub_explicit(&d->local_in_use, was - bytes,
		                                               memory_order_relaxed) -
		                         (was - bytes);
		vr__books_own_note(d, now);
	}
	atomic_store_explicit(&d->card.overhead, bytes, memory_order_relaxed);
	if (d->nouter)
		vr_outer_overhead(d, bytes);
}

int vr_books_others(struct vr_dev *d, struct vr_member_use *out, int n)
{
	return d->reg >= 0 ? vr_member_uses(vr__books_member, d->reg, out, n) : 0;
}

void vr_books_counting(unsigned bits)
{
	join();
	vr_counting_set(vr__books_member, bits, 1);
}

void vr_books_pinned(int64_t delta)
{
	join();
	if (vr__books_member)
		vr_note_pinned(vr__books_member, delta);
	else
		atomic_fetch_add_explicit(&local_pinned, delta, memory_order_relaxed);
	vr_rec_pinned(delta);
}

static void books_atfork_child(void)
{
	pthread_mutex_init(&join_lock, NULL);
	/* The parent's own books are the parent's: this process publishes its
	 * own if it needs them (devices.c forgets the devices' entries). */
	if (own) {
		munmap(own, VR_OWN_SIZE);
		own = NULL;
	}
	if (own_fd >= 0)
		close(own_fd);
	own_fd = -1;
	own_why[0] = '\0';
	vr_forget(vr__books_member);
	vr__books_member = NULL;
	atomic_store(&joined, 0);
	atomic_store(&local_pinned, 0);
	atomic_store(&local_spilled, 0);
	atomic_store(&vr__books_spill_budget, 0);
}
VR_ATFORK_CHILD(books_atfork_child);

/* At exit, a private group's region goes with its only member. */
__attribute__((destructor)) static void books_fini(void)
{
	char dir[512];
	if (!vr__books_member || !private_group[0] || vr_g.group[0])
		return;
	if (vr_g.registry_dir[0])
		snprintf(dir, sizeof dir, "%s", vr_g.registry_dir);
	else if (vr_default_dir(dir, sizeof dir) != 0)
		return;
	vr_group_remove(dir, private_group);
}
