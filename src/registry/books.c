/*
 * books.c - the books every allocation goes through: devices, reserve,
 * release, usage (the numbers shown apart: sample.c; spill: spill.c).
 *
 * A reserve or release takes no lock (docs/architecture.md, "The lock-free
 * books"): it marks its slot word busy, changes the device's total by
 * compare-and-swap against the cap this member joined with, then records
 * the bytes in its slot word and takes the mark off, in one atomic add.
 * The lock is for adding devices, joins, leaves, reclaims, denials and
 * recovery; they freeze the totals (lock.c) to see them hold still.
 *
 * Each call also checks the books against what this member keeps in its
 * own memory: its slot is still its own, the device's cap is the one it
 * joined with, the total's check bits are right for that cap and UUID.
 * Before any denial, with the books frozen, the totals are checked against
 * all slots and this process's holdings against its own count. When they
 * contradict, the member is detached (damage.c): it says why once and from then on
 * keeps its own books under the caps it joined with (docs/architecture.md,
 * "Failure model"). A detached member never writes into the group's books
 * again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "registry/books.h"
#include "registry/damage.h"
#include "registry/knobs.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/reclaim.h"

/* A detached member's reserve in its own books; force: never refused at
 * the cap (VR_TAKE_FORCE). */
static int priv_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, int force)
{
	struct vr_priv_dev *p = &m->priv[dev];
	if (!p->known)
		return -EINVAL;
	uint64_t cur = atomic_load_explicit(&p->mine, memory_order_relaxed);
	for (;;) {
		if (!force && (bytes > p->cap || cur > p->cap - bytes)) {
			if (in_use)
				*in_use = cur;
			return -ENOSPC;
		}
		if (atomic_compare_exchange_weak_explicit(
		        &p->mine, &cur, cur + bytes, memory_order_relaxed, memory_order_relaxed)) {
			if (in_use)
				*in_use = cur + bytes;
			return 0;
		}
	}
}

static void priv_release(vr_member *m, int dev, uint64_t bytes)
{
	_Atomic uint64_t *mine = &m->priv[dev].mine;
	uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(mine, &cur, cur - (bytes < cur ? bytes : cur),
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

/* Learns a device of the group this member has not named itself. */
static void priv_learn(vr_member *m, uint32_t d)
{
	struct vr_priv_dev *p = &m->priv[d];
	memcpy(p->uuid, m->hdr->dev[d].uuid, VR_UUID_LEN);
	p->cap = m->hdr->dev[d].cap;
	p->key = vr_tot_key(p->uuid);
	p->quantum = vr_lane_quantum(p->cap);
	p->reach = vr_lane_reach(p->cap);
	p->known = 1;
}

/* The device's cap was changed (caps.c: written with its check word, under
 * the lock): this member takes it from now on. Lock held, the device's
 * words checked (vr_dev_ok). Its lanes keep the quantum and reach of the
 * cap it joined with. */
_Atomic unsigned vr_caps_taken;

static void priv_take_cap(vr_member *m, uint32_t d)
{
	atomic_store_explicit(&m->priv[d].cap, m->hdr->dev[d].cap, memory_order_release);
	atomic_fetch_add_explicit(&vr_caps_taken, 1, memory_order_release);
}

static const char not_a_device[] = "not a device of the group";

/* The checks of every call on device dev. Lock held. Returns NULL, what is
 * wrong, or not_a_device (the caller's mistake, not damage). */
static const char *check_locked(vr_member *m, int dev)
{
	const struct vr_hdr *h = m->hdr;
	const struct vr_slot *s = m->slot;
	struct vr_priv_dev *p = &m->priv[dev];
	if (s->state != VR_SLOT_USED || s->incarnation != m->incarnation)
		return "this process's slot was overwritten or taken from it";
	if ((uint32_t)dev >= h->ndev)
		return p->known ? "the group's device count went down" : not_a_device;
	const struct vr_hdr_dev *g = &h->dev[dev];
	if (!p->known)
		priv_learn(m, (uint32_t)dev);
	if (memcmp(g->uuid, p->uuid, VR_UUID_LEN) != 0)
		return "a device's UUID differs from the one this process joined with";
	if (!vr_dev_ok(g))
		return "a device's cap or total was overwritten";
	if (g->cap != p->cap)
		priv_take_cap(m, (uint32_t)dev);
	/* Its own numbers against its own count: at the next audit, frozen
	 * (other threads of ours change both, not at once). */
	return NULL;
}

/* Takes the lock and checks the books for device dev. Returns 1 with the
 * lock held, 0 when the member is (now) detached, or -EINVAL when dev is
 * not a device of the group. */
int vr__lock_checked(vr_member *m, int dev)
{
	if (vr_is_detached(m))
		return m->priv[dev].known ? 0 : -EINVAL;
	if (vr_group_lock(m) != 0) {
		vr_detach(m, "the group's lock stayed held by a live member");
		return 0;
	}
	const char *bad = check_locked(m, dev);
	if (VR_UNLIKELY(bad != NULL)) {
		vr_group_unlock(m);
		if (bad == not_a_device)
			return -EINVAL;
		vr_detach(m, "%s", bad);
		return 0;
	}
	return 1;
}

/* ---- the books */

static int priv_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
                       uint64_t *cap)
{
	int free_idx = -1;
	for (int d = 0; d < VR_MAX_DEVICES; d++) {
		struct vr_priv_dev *p = &m->priv[d];
		if (p->known && memcmp(p->uuid, uuid, VR_UUID_LEN) == 0) {
			if (cap)
				*cap = p->cap;
			return d;
		}
		if (!p->known && free_idx < 0)
			free_idx = d;
	}
	if (free_idx < 0)
		return -ENOSPC;
	struct vr_priv_dev *p = &m->priv[free_idx];
	memcpy(p->uuid, uuid, VR_UUID_LEN);
	p->cap = cap_if_new;
	p->key = vr_tot_key(p->uuid);
	p->quantum = vr_lane_quantum(p->cap);
	p->reach = vr_lane_reach(p->cap);
	p->known = 1;
	if (cap)
		*cap = cap_if_new;
	return free_idx;
}

/* A device about to be added: no member may hold anything on it yet (the
 * audit reads only the group's devices). Lock held. Returns 0 when a
 * member's numbers are not 0. */
static int new_device_clean(struct vr_hdr *h, uint32_t d)
{
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++)
		if (vr_slot_at(h, i)->state == VR_SLOT_USED &&
		    (atomic_load_explicit(vr_slot_word(h, i, d), memory_order_relaxed) != 0 ||
		     vr_counts_at(h, i, d)->spilled != 0))
			return 0;
	return 1;
}

int vr_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
              uint64_t *cap)
{
	if (!m || !uuid)
		return -EINVAL;
	if (vr_is_detached(m))
		return priv_device(m, uuid, cap_if_new, cap);
	struct vr_hdr *h = m->hdr;
	uint64_t call = vr_call_begin();
	int locked = vr_group_lock(m);
	vr_call_end(call);
	if (locked != 0) {
		vr_detach(m, "the group's lock stayed held by a live member");
		return priv_device(m, uuid, cap_if_new, cap);
	}
	uint32_t ndev = vr_hdr_ndev(h);
	int idx = -ENOSPC;
	for (uint32_t d = 0; d < ndev; d++) {
		if (memcmp(h->dev[d].uuid, uuid, VR_UUID_LEN) == 0) {
			idx = (int)d;
			break;
		}
	}
	const char *bad = NULL;
	if (idx >= 0 && cap_if_new != UINT64_MAX && h->dev[idx].cap == UINT64_MAX &&
	    vr_dev_ok(&h->dev[idx])) {
		/* The group left it uncapped and this process asks for a cap:
		 * a cap asked for is never lost. It keeps its own books for the
		 * device, under its own cap (registry.h). */
		idx = -EPERM;
	} else if (idx >= 0) {
		if (!vr_dev_ok(&h->dev[idx]))
			bad = "a device's cap, UUID or total was overwritten";
		else if (m->priv[idx].known && m->priv[idx].cap != h->dev[idx].cap)
			priv_take_cap(m, (uint32_t)idx);
		else if (!m->priv[idx].known)
			priv_learn(m, (uint32_t)idx);
	} else if (ndev < VR_MAX_DEVICES && !m->priv[ndev].known && !new_device_clean(h, ndev)) {
		bad = vr__impossible;
	} else if (ndev < VR_MAX_DEVICES && !m->priv[ndev].known) {
		vr_seq_begin(h);
		uint32_t d = ndev;
		memset(&h->dev[d], 0, sizeof(h->dev[d]));
		memcpy(h->dev[d].uuid, uuid, VR_UUID_LEN);
		h->dev[d].cap = cap_if_new;
		vr_dev_set_total(&h->dev[d], 0);
		STORE32(&h->ndev, d + 1);
		vr_seq_end(h);
		idx = (int)d;
		priv_learn(m, d);
	} else if (ndev < VR_MAX_DEVICES) {
		bad = "the group's device count went down";
	}
	if (!bad && idx >= 0 && cap)
		*cap = m->priv[idx].cap;
	vr_group_unlock(m);
	if (bad) {
		vr_detach(m, "%s", bad);
		return priv_device(m, uuid, cap_if_new, cap);
	}
	return idx;
}

/* ---- the hot path: no lock */

/* FAST_RELEARN: the device's cap in the books is not the one this member
 * holds: learned under the lock (check_locked), then the operation again. */
enum { FAST_OK, FAST_DENIED, FAST_FROZEN, FAST_DAMAGED, FAST_RELEARN };

static const char cap_moved[] = "the device's cap changed";

/* The checks of every operation, after its mark: the slot is still ours
 * and the device's cap the one we hold (else cap_moved). */
static inline const char *fast_check(vr_member *m, const struct vr_priv_dev *p,
                                     const struct vr_hdr_dev *g)
{
	const struct vr_slot *s = m->slot;
	if (VR_UNLIKELY(atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_relaxed) !=
	                    VR_SLOT_USED ||
	                atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
	                                     memory_order_relaxed) != m->incarnation))
		return "this process's slot was overwritten or taken from it";
	if (VR_UNLIKELY(atomic_load_explicit((_Atomic uint64_t *)&g->cap, memory_order_relaxed) !=
	                atomic_load_explicit(&p->cap, memory_order_relaxed)))
		return cap_moved;
	return NULL;
}

/* What an operation may do with the total word w (its mark made): go on
 * (FAST_OK), wait (FAST_FROZEN), or give up on the group's books
 * (FAST_DAMAGED, *bad says why): the slot is no longer ours, the cap is
 * not the one we joined with, the check bits are wrong, or the total is
 * below the `least` bytes we are giving back. */
static inline int total_state(vr_member *m, const struct vr_priv_dev *p, const struct vr_hdr_dev *g,
                              uint64_t w, uint64_t least, const char **bad)
{
	if (VR_UNLIKELY((*bad = fast_check(m, p, g)) != NULL))
		return *bad == cap_moved ? FAST_RELEARN : FAST_DAMAGED;
	if (VR_UNLIKELY(w & VR_TOT_FROZEN))
		return FAST_FROZEN;
	if (VR_UNLIKELY(!vr_tot_ok(p->key, w))) {
		*bad = "a device's total was overwritten";
		return FAST_DAMAGED;
	}
	if (VR_UNLIKELY(vr_tot_bytes(w) < least)) {
		*bad = "a device's total is below this process's own holdings";
		return FAST_DAMAGED;
	}
	return FAST_OK;
}

/*
 * Reserves without the lock: mark the slot word busy, add to the total by
 * compare-and-swap under the cap, then add the bytes to the slot word and
 * take the mark off (one atomic add). A lock holder that froze the total
 * first makes us take the mark off untouched (FAST_FROZEN).
 */
static inline int fast_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *cur,
                               const char **bad, int force)
{
	struct vr_priv_dev *p = &m->priv[dev];
	struct vr_hdr_dev *g = &m->hdr->dev[dev];
	_Atomic uint64_t *sw = vr_slot_word(m->hdr, m->slot_idx, (uint32_t)dev);
	_Atomic uint64_t *tw = (_Atomic uint64_t *)&g->total;
	uint64_t x = atomic_fetch_add_explicit(sw, 1, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(tw, memory_order_relaxed), v = 0;
	int r;
	while ((r = total_state(m, p, g, w, 0, bad)) == FAST_OK) {
		uint64_t cap = atomic_load_explicit(&p->cap, memory_order_relaxed);
		v = vr_tot_bytes(w);
		/* The total never counts less than our own slot (a reserve adds
		 * to the total first, a release takes from the slot first), so a
		 * total below it is damage: unless another thread of ours changed
		 * the slot meanwhile (its word is then no longer ours + 1), or the
		 * total moved since it was read (a release, then a reserve, of
		 * other threads of ours, between our two loads, puts the slot
		 * back where it was: the figures were of two moments). */
		if (VR_UNLIKELY(v < vr_w_bytes(x)) &&
		    atomic_load_explicit(sw, memory_order_relaxed) == x + 1) {
			uint64_t again = atomic_load_explicit(tw, memory_order_acquire);
			if (again != w) {
				w = again;
				continue;
			}
			*bad = "a device's total is below this process's own holdings";
			r = FAST_DAMAGED;
			break;
		}
		if (VR_UNLIKELY(((bytes > cap || v > cap - bytes) && !force) ||
		                bytes > VR_TOT_MAX - v)) {
			*cur = v;
			r = FAST_DENIED;
			break;
		}
		if (VR_LIKELY(atomic_compare_exchange_weak_explicit(
		        tw, &w, vr_tot_make(p->key, v + bytes), memory_order_acq_rel,
		        memory_order_relaxed)))
			break;
	}
	if (VR_UNLIKELY(r != FAST_OK)) {
		atomic_fetch_sub_explicit(sw, 1, memory_order_release);
		return r;
	}
	vr_test_stop_point(); /* the total counts it, the slot not yet */
	atomic_fetch_add_explicit(&p->mine, bytes, memory_order_relaxed);
	uint64_t sv =
	    atomic_fetch_add_explicit(sw, (bytes << VR_W_SHIFT) - 1, memory_order_release);
	/* The peaks are of what was handed out: a lane's spare is not. A
	 * reserve's raise is noted, so that its caller can take it back
	 * (vr_unpeak); an overhead charge (force) is on the card already. */
	uint64_t *sp = &vr_counts_at(m->hdr, m->slot_idx, (uint32_t)dev)->peak;
	if (force) {
		vr_peak_raise(&g->peak, v + bytes - spare);
		vr_peak_raise(sp, vr_w_bytes(sv) + bytes - spare);
	} else {
		vr_peak_raise_noted(&g->peak, v + bytes - spare);
		vr_peak_raise_noted(sp, vr_w_bytes(sv) + bytes - spare);
	}
	*cur = v + bytes;
	return FAST_OK;
}

/* Releases without the lock: the slot word first (marked busy), then the
 * total, then the mark off. Between the two, the total counts the bytes
 * still: never less than the slots. */
static inline int fast_release(vr_member *m, int dev, uint64_t bytes, const char **bad)
{
	struct vr_hdr *h = m->hdr;
	struct vr_priv_dev *p = &m->priv[dev];
	struct vr_hdr_dev *g = &h->dev[dev];
	_Atomic uint64_t *sw = vr_slot_word(h, m->slot_idx, (uint32_t)dev);
	_Atomic uint64_t *tw = (_Atomic uint64_t *)&g->total;
	uint64_t x = atomic_load_explicit(sw, memory_order_relaxed), b;
	do {
		b = bytes < vr_w_bytes(x) ? bytes : vr_w_bytes(x);
	} while (!atomic_compare_exchange_weak_explicit(
	    sw, &x, x - (b << VR_W_SHIFT) + 1, memory_order_relaxed, memory_order_relaxed));
	vr_test_stop_point(); /* the slot is down, the total not yet */
	uint64_t w = atomic_load_explicit(tw, memory_order_relaxed);
	int r;
	while ((r = total_state(m, p, g, w, b, bad)) == FAST_OK &&
	       !atomic_compare_exchange_weak_explicit(tw, &w,
	                                              vr_tot_make(p->key, vr_tot_bytes(w) - b),
	                                              memory_order_acq_rel, memory_order_relaxed))
		;
	if (VR_UNLIKELY(r != FAST_OK)) {
		atomic_fetch_add_explicit(sw, (b << VR_W_SHIFT) - 1, memory_order_release);
		return r;
	}
	atomic_fetch_sub_explicit(&p->mine, b, memory_order_relaxed);
	atomic_fetch_sub_explicit(sw, 1, memory_order_release);
	vr_wake_waiters(h); /* one load while nobody waits */
	return FAST_OK;
}

/* A total found frozen: wait for its freezer through the lock. With the
 * lock, a total still frozen was left so by damage (a freezer that died
 * was recovered when the lock was taken over): it is thawed as it is.
 * 0, or -1 when the member is now detached. */
static int wait_frozen(vr_member *m)
{
	if (vr_group_lock(m) != 0) {
		vr_detach(m, "the group's lock stayed held by a live member");
		return -1;
	}
	vr_reg_thaw(m, 0);
	vr_group_unlock(m);
	return 0;
}

/* The device's cap moved: learned under the lock (check_locked), or the
 * member is detached. */
static void relearn(vr_member *m, int dev)
{
	if (vr__lock_checked(m, dev) > 0)
		vr_group_unlock(m);
}

/* Makes sure this member knows device dev (learned under the lock from
 * the group's books). 1 if it does, 0 when it is (now) detached, -EINVAL
 * when dev is not a device of the group. */
static int know_device(vr_member *m, int dev)
{
	if (VR_LIKELY(m->priv[dev].known))
		return 1;
	int locked = vr__lock_checked(m, dev);
	if (locked > 0)
		vr_group_unlock(m);
	return locked;
}

/* The slow end of a reserve that did not fit: reclaim the dead, check
 * every slot with the books frozen, try once more under the lock, and
 * count the denial. */
static int reserve_denied(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, int count_denial)
{
	vr_reclaim_dead(m);
	int locked = vr__lock_checked(m, dev);
	if (locked <= 0)
		return locked < 0 ? locked : priv_reserve(m, dev, bytes, in_use, 0);
	const char *bad = vr_audit_locked(m);
	uint64_t cur = 0;
	int r = bad ? FAST_DAMAGED : fast_reserve(m, dev, bytes, 0, &cur, &bad, 0);
	if (r == FAST_FROZEN) /* only damage freezes a total under our lock */
		bad = "a device's total was frozen by no lock holder";
	if (r == FAST_RELEARN) /* only a lock holder changes a cap */
		bad = "a device's cap changed under this process's lock";
	if (r == FAST_DENIED && count_denial && !m->waits) {
		struct vramctl_counts *c = vr_counts_at(m->hdr, m->slot_idx, (uint32_t)dev);
		vr_seq_begin(m->hdr);
		c->denied_count++;
		c->last_denied = bytes;
		m->hdr->denials++;
		vr_seq_end(m->hdr);
	}
	if (in_use && (r == FAST_DENIED || r == FAST_OK))
		*in_use = cur;
	vr_group_unlock(m);
	if (r == FAST_OK)
		return 0;
	if (r == FAST_DENIED)
		return -ENOSPC;
	vr_detach(m, "%s", bad);
	return priv_reserve(m, dev, bytes, in_use, 0);
}

static int take_loop(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                     enum vr_take how);

/* A reserve that did not go through at once: it may wait (for the lock, for
 * operations in flight) more than once, within one bound in all. */
static __attribute__((noinline)) int take_slow(vr_member *m, int dev, uint64_t bytes,
                                               uint64_t spare, uint64_t *in_use, enum vr_take how)
{
	uint64_t call = vr_call_begin();
	int rc = take_loop(m, dev, bytes, spare, in_use, how);
	vr_call_end(call);
	return rc;
}

/* The peaks a thread's reserves raised (registry.h, vr_unpeak). */
__thread struct vr_peak_note vr__peak_note __attribute__((tls_model("initial-exec")));

void vr_unpeak(void)
{
	struct vr_peak_note *n = &vr__peak_note;
	for (int i = 0; i < n->n; i++) {
		uint64_t expect = n->now[i];
		atomic_compare_exchange_strong((_Atomic uint64_t *)n->field[i], &expect, n->was[i]);
	}
	n->n = 0;
}

int vr_reg_take(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                enum vr_take how)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	if (VR_LIKELY(!vr_is_detached(m) && m->priv[dev].known)) {
		const char *bad = NULL;
		uint64_t cur = 0;
		int r = fast_reserve(m, dev, bytes, spare, &cur, &bad, how == VR_TAKE_FORCE);
		if (VR_LIKELY(r == FAST_OK)) {
			if (in_use)
				*in_use = cur;
			return 0;
		}
		if (r == FAST_DENIED && how == VR_TAKE_TRY)
			return -ENOSPC;
	}
	return take_slow(m, dev, bytes, spare, in_use, how);
}

static int take_loop(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                     enum vr_take how)
{
	for (;;) {
		int force = how == VR_TAKE_FORCE;
		if (VR_UNLIKELY(vr_is_detached(m)))
			return m->priv[dev].known ? priv_reserve(m, dev, bytes, in_use, force)
			                          : -EINVAL;
		int known = know_device(m, dev);
		if (VR_UNLIKELY(known <= 0))
			return known < 0 ? known : priv_reserve(m, dev, bytes, in_use, force);
		const char *bad = NULL;
		uint64_t cur = 0;
		int r = fast_reserve(m, dev, bytes, spare, &cur, &bad, force);
		if (VR_LIKELY(r == FAST_OK)) {
			if (in_use)
				*in_use = cur;
			return 0;
		}
		if (r == FAST_DENIED && how == VR_TAKE_TRY)
			return -ENOSPC;
		if (r == FAST_DENIED)
			return reserve_denied(m, dev, bytes, in_use, how == VR_TAKE_COUNT);
		if (r == FAST_DAMAGED)
			vr_detach(m, "%s", bad);
		else if (r == FAST_RELEARN)
			relearn(m, dev);
		else
			wait_frozen(m);
	}
}

static void give_loop(vr_member *m, int dev, uint64_t bytes);

void vr_reg_give(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	if (VR_LIKELY(!vr_is_detached(m) && m->priv[dev].known)) {
		const char *bad = NULL;
		if (VR_LIKELY(fast_release(m, dev, bytes, &bad) == FAST_OK))
			return;
		/* Not given back: the loop below finds why (the release undid
		 * itself). */
	}
	uint64_t call = vr_call_begin(); /* its waits share one bound */
	give_loop(m, dev, bytes);
	vr_call_end(call);
}

static void give_loop(vr_member *m, int dev, uint64_t bytes)
{
	for (;;) {
		if (VR_UNLIKELY(vr_is_detached(m))) {
			if (m->priv[dev].known)
				priv_release(m, dev, bytes);
			return;
		}
		if (VR_UNLIKELY(!m->priv[dev].known))
			return; /* nothing was reserved on it */
		const char *bad = NULL;
		int r = fast_release(m, dev, bytes, &bad);
		if (VR_LIKELY(r == FAST_OK))
			return;
		if (r == FAST_DAMAGED)
			vr_detach(m, "%s", bad);
		else if (r == FAST_RELEARN)
			relearn(m, dev);
		else
			wait_frozen(m);
	}
}

void vr_usage(vr_member *m, int dev, uint64_t *in_use, uint64_t *cap)
{
	uint64_t u = 0, c = UINT64_MAX;
	if (m && dev >= 0 && dev < VR_MAX_DEVICES && know_device(m, dev) >= 0 &&
	    m->priv[dev].known) {
		struct vr_priv_dev *p = &m->priv[dev];
		if (!vr_is_detached(m) && fast_check(m, p, &m->hdr->dev[dev]) == cap_moved)
			relearn(m, dev);
		c = atomic_load_explicit(&p->cap, memory_order_acquire);
		if (!vr_is_detached(m)) {
			const char *bad = fast_check(m, p, &m->hdr->dev[dev]);
			uint64_t w = vr_dev_total_word(&m->hdr->dev[dev]);
			if (!bad && !vr_tot_ok(p->key, w))
				bad = "a device's total was overwritten";
			if (bad)
				vr_detach(m, "%s", bad);
			else
				u = vr_tot_bytes(w) -
				    vr_lanes_spare(m->slot, (uint32_t)dev, vr_tot_bytes(w));
		}
		if (vr_is_detached(m))
			u = atomic_load_explicit(&p->mine, memory_order_relaxed);
	}
	if (in_use)
		*in_use = u;
	if (cap)
		*cap = c;
}

/* ---- overhead: what the card holds for this process beyond its blocks */

int vr_overhead_set(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || know_device(m, dev) < 0 ||
	    !m->priv[dev].known || bytes > VR_TOT_MAX)
		return -EINVAL;
	struct vr_priv_dev *p = &m->priv[dev];
	uint64_t was = p->overhead, total = 0;
	if (bytes > was) {
		int r = vr_reg_take(m, dev, bytes - was, 0, &total, VR_TAKE_FORCE);
		if (r != 0)
			return r;
	} else if (bytes < was) {
		vr_reg_give(m, dev, was - bytes);
	}
	p->overhead = bytes;
	if (!vr_is_detached(m))
		STORE64(&vr_counts_at(m->hdr, m->slot_idx, (uint32_t)dev)->overhead, bytes);
	if (in_use)
		vr_usage(m, dev, in_use, NULL);
	return 0;
}

uint64_t vr_group_key(const vr_member *m)
{
	return m ? m->hdr->shm_key : 0;
}

uint64_t vr_mine(vr_member *m, int dev)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || !m->priv[dev].known)
		return 0;
	if (vr_is_detached(m) || (uint32_t)dev >= vr_hdr_ndev(m->hdr))
		return atomic_load_explicit(&m->priv[dev].mine, memory_order_relaxed);
	return vr_slot_used(m->hdr, m->slot_idx, (uint32_t)dev);
}
