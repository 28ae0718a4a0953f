/*
 * books.c - the books every allocation goes through: devices, reserve,
 * release, usage, and the numbers shown apart.
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
 * contradict, the member is detached: it says why once and from then on
 * keeps its own books under the caps it joined with (docs/architecture.md,
 * "Failure model"). A detached member never writes into the group's books
 * again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "registry/member.h"
#include "registry/util.h"

void vr_detach(vr_member *m, const char *fmt, ...)
{
	int was = 0;
	if (!atomic_compare_exchange_strong(&m->detached, &was, -1))
		return;
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(m->why, sizeof(m->why),
	         "the group's books are damaged (%s); this process keeps its own books under the "
	         "caps it joined with",
	         why);
	atomic_store(&m->detached, 1);
	if (m->notice)
		m->notice(m->why);
}

const char *vr_damaged(const vr_member *m)
{
	return m && atomic_load(&((vr_member *)m)->detached) == 1 ? m->why : NULL;
}

/* ---- private books: after damage, this process alone under its caps */

static int priv_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	struct vr_priv_dev *p = &m->priv[dev];
	if (!p->known)
		return -EINVAL;
	uint64_t cur = atomic_load_explicit(&p->mine, memory_order_relaxed);
	for (;;) {
		if (bytes > p->cap || cur > p->cap - bytes) {
			if (in_use)
				*in_use = cur;
			return -ENOSPC;
		}
		if (atomic_compare_exchange_weak_explicit(
		        &p->mine, &cur, cur + bytes, memory_order_relaxed, memory_order_relaxed))
			return 0;
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

/* ---- checks */

static const char impossible[] = "a slot holds impossible numbers";

static const char *audit_frozen(vr_member *m, const uint64_t sum[VR_MAX_DEVICES], int dead_busy)
{
	const struct vr_region_hdr *h = m->hdr;
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > VR_REGION_SLOTS)
		return "counts out of range";
	uint32_t hw = h->slots_hw, ndev = h->ndev;
	uint64_t spilled = 0;
	for (uint32_t i = 0; i < hw; i++) {
		const struct vr_slot *s = vr_region_slot((struct vr_region_hdr *)h, i);
		if (s->state == VR_SLOT_FREE)
			continue;
		if (s->state != VR_SLOT_USED)
			return "a slot's state is neither free nor used";
		/* The group's devices only: a slot's numbers for a device not
		 * yet added are checked when it is added (vr_device). Reading
		 * all VR_MAX_DEVICES of every slot made each join's audit read
		 * every member's whole slot, with the lock held. */
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t sp = vr_region_counts((struct vr_region_hdr *)h, i, d)->spilled;
			if (spilled + sp < spilled)
				return impossible;
			spilled += sp;
		}
	}
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t t = vr_dev_total(&h->dev[d]);
		if (!vr_dev_ok(&h->dev[d]))
			return "a device's cap, UUID or total was overwritten";
		/* A member that died inside an operation may be counted in the
		 * total for what it had in flight, never less. */
		if (dead_busy ? t < sum[d] : t != sum[d])
			return "a device's total differs from its members' holdings";
	}
	if (spilled != h->spilled)
		return "the group's spilled total differs from its members' holdings";
	if (h->spill_budget != m->spill_budget)
		return "the group's spill budget differs from the one this process joined with";
	int own = m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation;
	for (uint32_t d = 0; d < VR_MAX_DEVICES; d++) {
		const struct vr_priv_dev *p = &m->priv[d];
		if (p->known && (d >= ndev || h->dev[d].cap != p->cap ||
		                 memcmp(h->dev[d].uuid, p->uuid, VR_UUID_LEN) != 0))
			return "a device's cap or UUID differs from the one this process joined "
			       "with";
		uint64_t w;
		if (p->known && own && vr_slot_settled(m, m->slot_idx, d, &w, NULL) == 0 &&
		    vr_w_bytes(w) != atomic_load(&p->mine))
			return "this process's own numbers were overwritten";
	}
	return NULL;
}

const char *vr_audit_locked(vr_member *m)
{
	int dead_busy = 0;
	uint64_t sum[VR_MAX_DEVICES];
	int rc = vr_books_freeze(m, &dead_busy);
	if (rc == -EBADMSG)
		return "a device's total was overwritten";
	if (rc != 0) /* a live member stopped inside an operation: not now */
		return NULL;
	if (vr_books_sum(m, sum, &dead_busy) != 0) {
		vr_books_thaw(m, 0);
		return NULL;
	}
	const char *bad = audit_frozen(m, sum, dead_busy);
	vr_books_thaw(m, !bad && dead_busy);
	return bad;
}

/* Learns a device of the group this member has not named itself. */
static void priv_learn(vr_member *m, uint32_t d)
{
	struct vr_priv_dev *p = &m->priv[d];
	memcpy(p->uuid, m->hdr->dev[d].uuid, VR_UUID_LEN);
	p->cap = m->hdr->dev[d].cap;
	p->key = vr_dev_key_of(p->cap, p->uuid);
	p->quantum = vr_lane_quantum(p->cap);
	p->known = 1;
}

static const char not_a_device[] = "not a device of the group";

/* The checks of every call on device dev. Lock held. Returns NULL, what is
 * wrong, or not_a_device (the caller's mistake, not damage). */
static const char *check_locked(vr_member *m, int dev)
{
	const struct vr_region_hdr *h = m->hdr;
	const struct vr_slot *s = m->slot;
	struct vr_priv_dev *p = &m->priv[dev];
	if (s->state != VR_SLOT_USED || s->incarnation != m->incarnation)
		return "this process's slot was overwritten or taken from it";
	if ((uint32_t)dev >= h->ndev)
		return p->known ? "the group's device count went down" : not_a_device;
	const struct vr_region_dev *g = &h->dev[dev];
	if (!p->known)
		priv_learn(m, (uint32_t)dev);
	if (g->cap != p->cap || memcmp(g->uuid, p->uuid, VR_UUID_LEN) != 0)
		return "a device's cap or UUID differs from the one this process joined with";
	if (!vr_dev_ok(g))
		return "a device's total was overwritten";
	/* Its own numbers against its own count: at the next audit, frozen
	 * (other threads of ours change both, not at once). */
	return NULL;
}

/* Takes the lock and checks the books for device dev. Returns 1 with the
 * lock held, 0 when the member is (now) detached, or -EINVAL when dev is
 * not a device of the group. */
static int lock_checked(vr_member *m, int dev)
{
	if (vr_is_detached(m))
		return m->priv[dev].known ? 0 : -EINVAL;
	if (vr_region_lock(m) != 0) {
		vr_detach(m, "the group's lock stayed held by a live member");
		return 0;
	}
	const char *bad = check_locked(m, dev);
	if (VR_UNLIKELY(bad != NULL)) {
		vr_region_unlock(m);
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
	p->key = vr_dev_key_of(p->cap, p->uuid);
	p->quantum = vr_lane_quantum(p->cap);
	p->known = 1;
	if (cap)
		*cap = cap_if_new;
	return free_idx;
}

/* A device about to be added: no member may hold anything on it yet (the
 * audit reads only the group's devices). Lock held. Returns 0 when a
 * member's numbers are not 0. */
static int new_device_clean(struct vr_region_hdr *h, uint32_t d)
{
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++)
		if (vr_region_slot(h, i)->state == VR_SLOT_USED &&
		    (atomic_load_explicit(vr_slot_word(h, i, d), memory_order_relaxed) != 0 ||
		     vr_region_counts(h, i, d)->spilled != 0))
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
	struct vr_region_hdr *h = m->hdr;
	if (vr_region_lock(m) != 0) {
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
	if (idx >= 0) {
		if (!vr_dev_ok(&h->dev[idx]))
			bad = "a device's cap, UUID or total was overwritten";
		else if (m->priv[idx].known && m->priv[idx].cap != h->dev[idx].cap)
			bad = "a device's cap differs from the one this process joined with";
		else if (!m->priv[idx].known)
			priv_learn(m, (uint32_t)idx);
	} else if (ndev < VR_MAX_DEVICES && !m->priv[ndev].known && !new_device_clean(h, ndev)) {
		bad = impossible;
	} else if (ndev < VR_MAX_DEVICES && !m->priv[ndev].known) {
		books_begin(h);
		uint32_t d = ndev;
		memset(&h->dev[d], 0, sizeof(h->dev[d]));
		memcpy(h->dev[d].uuid, uuid, VR_UUID_LEN);
		h->dev[d].cap = cap_if_new;
		vr_dev_set_total(&h->dev[d], 0);
		STORE32(&h->ndev, d + 1);
		books_end(h);
		idx = (int)d;
		priv_learn(m, d);
	} else if (ndev < VR_MAX_DEVICES) {
		bad = "the group's device count went down";
	}
	if (!bad && idx >= 0 && cap)
		*cap = m->priv[idx].cap;
	vr_region_unlock(m);
	if (bad) {
		vr_detach(m, "%s", bad);
		return priv_device(m, uuid, cap_if_new, cap);
	}
	return idx;
}

/* ---- the hot path: no lock */

enum { FAST_OK, FAST_DENIED, FAST_FROZEN, FAST_DAMAGED };

/* The checks of every operation, after its mark: the slot is still ours
 * and the device's cap the one we joined with. */
static inline const char *fast_check(vr_member *m, const struct vr_priv_dev *p,
                                     const struct vr_region_dev *g)
{
	const struct vr_slot *s = m->slot;
	if (VR_UNLIKELY(atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_relaxed) !=
	                    VR_SLOT_USED ||
	                atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
	                                     memory_order_relaxed) != m->incarnation))
		return "this process's slot was overwritten or taken from it";
	if (VR_UNLIKELY(atomic_load_explicit((_Atomic uint64_t *)&g->cap, memory_order_relaxed) !=
	                p->cap))
		return "a device's cap or UUID differs from the one this process joined with";
	return NULL;
}

/* What an operation may do with the total word w (its mark made): go on
 * (FAST_OK), wait (FAST_FROZEN), or give up on the group's books
 * (FAST_DAMAGED, *bad says why): the slot is no longer ours, the cap is
 * not the one we joined with, the check bits are wrong, or the total is
 * below the `least` bytes we are giving back. */
static inline int total_state(vr_member *m, const struct vr_priv_dev *p,
                              const struct vr_region_dev *g, uint64_t w, uint64_t least,
                              const char **bad)
{
	if (VR_UNLIKELY((*bad = fast_check(m, p, g)) != NULL))
		return FAST_DAMAGED;
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
                               const char **bad)
{
	struct vr_priv_dev *p = &m->priv[dev];
	struct vr_region_dev *g = &m->hdr->dev[dev];
	_Atomic uint64_t *sw = vr_slot_word(m->hdr, m->slot_idx, (uint32_t)dev);
	_Atomic uint64_t *tw = (_Atomic uint64_t *)&g->total;
	atomic_fetch_add_explicit(sw, 1, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(tw, memory_order_relaxed), v = 0;
	int r;
	while ((r = total_state(m, p, g, w, 0, bad)) == FAST_OK) {
		v = vr_tot_bytes(w);
		if (VR_UNLIKELY(bytes > p->cap || v > p->cap - bytes || bytes > VR_TOT_MAX - v)) {
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
	/* The peaks are of what was handed out: a lane's spare is not. */
	vr_peak_raise(&g->peak, v + bytes - spare);
	vr_peak_raise(&vr_region_counts(m->hdr, m->slot_idx, (uint32_t)dev)->peak,
	              vr_w_bytes(sv) + bytes - spare);
	return FAST_OK;
}

/* Releases without the lock: the slot word first (marked busy), then the
 * total, then the mark off. Between the two, the total counts the bytes
 * still: never less than the slots. */
static inline int fast_release(vr_member *m, int dev, uint64_t bytes, const char **bad)
{
	struct vr_priv_dev *p = &m->priv[dev];
	struct vr_region_dev *g = &m->hdr->dev[dev];
	_Atomic uint64_t *sw = vr_slot_word(m->hdr, m->slot_idx, (uint32_t)dev);
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
	return FAST_OK;
}

/* A total found frozen: wait for its freezer through the lock. With the
 * lock, a total still frozen was left so by damage (a freezer that died
 * was recovered when the lock was taken over): it is thawed as it is.
 * 0, or -1 when the member is now detached. */
static int wait_frozen(vr_member *m)
{
	if (vr_region_lock(m) != 0) {
		vr_detach(m, "the group's lock stayed held by a live member");
		return -1;
	}
	vr_books_thaw(m, 0);
	vr_region_unlock(m);
	return 0;
}

/* Makes sure this member knows device dev (learned under the lock from
 * the group's books). 1 if it does, 0 when it is (now) detached, -EINVAL
 * when dev is not a device of the group. */
static int know_device(vr_member *m, int dev)
{
	if (VR_LIKELY(m->priv[dev].known))
		return 1;
	int locked = lock_checked(m, dev);
	if (locked > 0)
		vr_region_unlock(m);
	return locked;
}

/* The slow end of a reserve that did not fit: reclaim the dead, check
 * every slot with the books frozen, try once more under the lock, and
 * count the denial. */
static int reserve_denied(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, int count_denial)
{
	vr_reclaim_dead(m);
	int locked = lock_checked(m, dev);
	if (locked <= 0)
		return locked < 0 ? locked : priv_reserve(m, dev, bytes, in_use);
	const char *bad = vr_audit_locked(m);
	uint64_t cur = 0;
	int r = bad ? FAST_DAMAGED : fast_reserve(m, dev, bytes, 0, &cur, &bad);
	if (r == FAST_FROZEN) /* only damage freezes a total under our lock */
		bad = "a device's total was frozen by no lock holder";
	if (r == FAST_DENIED && count_denial) {
		struct vramctl_counts *c = vr_region_counts(m->hdr, m->slot_idx, (uint32_t)dev);
		books_begin(m->hdr);
		c->denied_count++;
		c->last_denied = bytes;
		books_end(m->hdr);
	}
	if (r == FAST_DENIED) {
		if (in_use)
			*in_use = cur;
	}
	vr_region_unlock(m);
	if (r == FAST_OK)
		return 0;
	if (r == FAST_DENIED)
		return -ENOSPC;
	vr_detach(m, "%s", bad);
	return priv_reserve(m, dev, bytes, in_use);
}

int vr_books_take(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                  enum vr_take how)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	for (;;) {
		if (VR_UNLIKELY(vr_is_detached(m)))
			return m->priv[dev].known ? priv_reserve(m, dev, bytes, in_use) : -EINVAL;
		int known = know_device(m, dev);
		if (VR_UNLIKELY(known <= 0))
			return known < 0 ? known : priv_reserve(m, dev, bytes, in_use);
		const char *bad = NULL;
		uint64_t cur = 0;
		int r = fast_reserve(m, dev, bytes, spare, &cur, &bad);
		if (VR_LIKELY(r == FAST_OK))
			return 0;
		if (r == FAST_DENIED && how == VR_TAKE_TRY)
			return -ENOSPC;
		if (r == FAST_DENIED)
			return reserve_denied(m, dev, bytes, in_use, how == VR_TAKE_COUNT);
		if (r == FAST_DAMAGED)
			vr_detach(m, "%s", bad);
		else
			wait_frozen(m);
	}
}

void vr_books_give(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
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
		c = p->cap;
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

static void add_clamped(uint64_t *v, int64_t delta)
{
	if (delta >= 0)
		*v += (uint64_t)delta;
	else
		*v -= (uint64_t)(-(delta + 1)) + 1 < *v ? (uint64_t)(-(delta + 1)) + 1 : *v;
}

/* Display-only numbers: kept in the slot while the books are trusted. */
static int lock_own_slot(vr_member *m)
{
	if (vr_is_detached(m) || vr_region_lock(m) != 0)
		return 0;
	if (m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation)
		return 1;
	vr_region_unlock(m);
	return 0;
}

void vr_note_pinned(vr_member *m, int64_t delta)
{
	if (!m || !lock_own_slot(m))
		return;
	books_begin(m->hdr);
	add_clamped(&m->slot->host_pinned, delta);
	books_end(m->hdr);
	vr_region_unlock(m);
}

void vr_note_denied(vr_member *m, int dev, uint64_t bytes)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || !lock_own_slot(m))
		return;
	if ((uint32_t)dev < vr_hdr_ndev(m->hdr)) {
		books_begin(m->hdr);
		struct vramctl_counts *c = vr_region_counts(m->hdr, m->slot_idx, (uint32_t)dev);
		c->denied_count++;
		c->last_denied = bytes;
		books_end(m->hdr);
	}
	vr_region_unlock(m);
}

/* ---- spill: one host budget for the group (docs/spill.md) */

/* A member with damaged books holds its own spill against its budget. */
static int priv_spill(vr_member *m, uint64_t bytes, uint64_t *spilled, uint64_t *budget)
{
	uint64_t b = m->spill_budget;
	uint64_t cur = atomic_load_explicit(&m->spilled_mine, memory_order_relaxed);
	if (budget)
		*budget = b;
	for (;;) {
		if (spilled)
			*spilled = cur;
		if (bytes > b || cur > b - bytes)
			return -ENOSPC;
		if (atomic_compare_exchange_weak_explicit(&m->spilled_mine, &cur, cur + bytes,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed)) {
			if (spilled)
				*spilled = cur + bytes;
			return 0;
		}
	}
}

/* Lock held, books checked for dev. */
static int spill_try_locked(vr_member *m, int dev, uint64_t bytes, uint64_t *spilled,
                            uint64_t *budget)
{
	struct vr_region_hdr *h = m->hdr;
	uint64_t cur = h->spilled, b = m->spill_budget;
	int rc = 0;
	if (bytes > b || cur > b - bytes) {
		rc = -ENOSPC;
	} else {
		books_begin(h);
		h->spilled = cur + bytes;
		vr_region_counts(h, m->slot_idx, (uint32_t)dev)->spilled += bytes;
		atomic_fetch_add_explicit(&m->spilled_mine, bytes, memory_order_relaxed);
		books_end(h);
		cur += bytes;
	}
	if (spilled)
		*spilled = cur;
	if (budget)
		*budget = b;
	return rc;
}

int vr_spill_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *spilled, uint64_t *budget)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	for (int round = 0;; round++) {
		int locked = lock_checked(m, dev);
		if (VR_UNLIKELY(locked <= 0))
			return locked < 0 ? locked : priv_spill(m, bytes, spilled, budget);
		/* Spilling is rare and slow (pinning host memory): every time, the
		 * whole books are checked first (the total and the budget too). */
		const char *bad = vr_audit_locked(m);
		if (VR_UNLIKELY(bad != NULL)) {
			vr_region_unlock(m);
			vr_detach(m, "%s", bad);
			return priv_spill(m, bytes, spilled, budget);
		}
		int rc = spill_try_locked(m, dev, bytes, spilled, budget);
		vr_region_unlock(m);
		/* As for the caps: what dead members held comes back before a
		 * refusal. */
		if (rc != -ENOSPC || round > 0 || vr_reclaim_dead(m) <= 0)
			return rc;
	}
}

void vr_spill_release(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	_Atomic uint64_t *mine = &m->spilled_mine;
	uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
	uint64_t b = bytes < cur ? bytes : cur;
	if (lock_checked(m, dev) > 0) {
		struct vr_region_hdr *h = m->hdr;
		struct vramctl_counts *s = vr_region_counts(h, m->slot_idx, (uint32_t)dev);
		b = bytes < s->spilled ? bytes : s->spilled;
		books_begin(h);
		s->spilled -= b;
		h->spilled -= b < h->spilled ? b : h->spilled;
		books_end(h);
		atomic_fetch_sub_explicit(mine, b < cur ? b : cur, memory_order_relaxed);
		vr_region_unlock(m);
		return;
	}
	atomic_fetch_sub_explicit(mine, b, memory_order_relaxed);
}

uint64_t vr_spill_budget(const vr_member *m)
{
	return m ? m->spill_budget : 0;
}

/* 1 if every device's total is its sum in sum[]. Books frozen. */
static int sums_match(const struct vr_region_hdr *h, const uint64_t sum[VR_MAX_DEVICES])
{
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < ndev; d++)
		if (vr_dev_total(&h->dev[d]) != sum[d])
			return 0;
	return 1;
}

int vr_sample(vr_member *m, int dev, struct vr_books_sample *out)
{
	if (!m || !out || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (vr_is_detached(m))
		return -EIO;
	int rc = vr_region_lock(m);
	if (rc < 0)
		return rc;
	struct vr_region_hdr *h = m->hdr;
	if ((uint32_t)dev >= vr_hdr_ndev(h)) {
		vr_region_unlock(m);
		return -EINVAL;
	}
	/* Frozen, the totals and slots hold still (unless a live member is
	 * stopped inside an operation: then the sample is as it stands). */
	uint64_t sum[VR_MAX_DEVICES];
	int dead_busy = 0, frozen = vr_books_freeze(m, &dead_busy) == 0, summed = 0;
	for (int round = 0; frozen && round < 8; round++) {
		if (dead_busy) {
			/* A member died inside an operation: settle the totals
			 * from the slots first, and freeze again. */
			vr_books_thaw(m, 1);
			frozen = vr_books_freeze(m, NULL) == 0;
			if (!frozen)
				break;
		}
		dead_busy = 0;
		summed = vr_books_sum(m, sum, &dead_busy) == 0;
		/* One that died while we summed, inside an operation it began
		 * after the freeze (which it would have undone, had it lived),
		 * left its slot word moved: settle again. A member found dead
		 * in an operation before is already settled: the sums match. */
		if (!summed || !dead_busy || sums_match(h, sum))
			break;
		summed = 0;
	}
	out->cap = h->dev[dev].cap;
	out->in_use = vr_dev_total(&h->dev[dev]);
	out->peak = h->dev[dev].peak;
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_region_slot(h, i);
		if (s->state == VR_SLOT_USED) {
			if (!summed)
				out->slots_sum += vr_slot_held(h, i, (uint32_t)dev);
			out->used_slots++;
		}
	}
	if (summed)
		out->slots_sum = sum[dev];
	if (frozen)
		vr_books_thaw(m, 0);
	vr_region_unlock(m);
	return 0;
}

int vr_holders(vr_member *m, int dev, uint64_t *self, uint64_t *peak, struct vr_holder *out, int n)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || n < 0)
		return -EINVAL;
	if (!lock_own_slot(m))
		return -EIO; /* detached, or the slot is no longer ours */
	struct vr_region_hdr *h = m->hdr;
	int got = 0;
	if ((uint32_t)dev < vr_hdr_ndev(h)) {
		*peak = h->dev[dev].peak;
		*self = vr_slot_used(h, m->slot_idx, (uint32_t)dev);
		uint32_t hw = vr_hdr_hw(h);
		for (uint32_t i = 0; i < hw; i++) {
			struct vr_slot *s = vr_region_slot(h, i);
			uint64_t b = vr_slot_used(h, i, (uint32_t)dev);
			if (s->state != VR_SLOT_USED || s == m->slot || b == 0)
				continue;
			/* Insertion into the n largest, largest first. */
			int at = got < n ? got++ : n;
			while (at > 0 && out[at - 1].bytes < b) {
				if (at < n)
					out[at] = out[at - 1];
				at--;
			}
			if (at < n) {
				out[at].pid = s->pid;
				out[at].bytes = b;
				memcpy(out[at].command, s->command, sizeof out[at].command - 1);
				out[at].command[sizeof out[at].command - 1] = '\0';
			}
		}
	}
	vr_region_unlock(m);
	return got;
}

uint64_t vr_max_lock_wait_ns(const vr_member *m)
{
	return m ? atomic_load(&((vr_member *)m)->max_wait_ns) : 0;
}

int vr_group_spec(const vr_member *m, char *buf, size_t len)
{
	if (!m || !buf || len == 0)
		return -EINVAL;
	/* Written only by a join that finds no live member, and this member is
	 * live: the text cannot change under us. */
	const char *spec = m->hdr->limit_spec;
	size_t n = strnlen(spec, sizeof(m->hdr->limit_spec));
	vr_strlcpy(buf, n < sizeof(m->hdr->limit_spec) ? spec : "", len);
	/* A text that fills the field may have been cut when it was stored. */
	return n >= sizeof(m->hdr->limit_spec) - 1 || n >= len ? 1 : 0;
}

int vr_slot_index(const vr_member *m)
{
	return m ? (int)m->slot_idx : -1;
}
