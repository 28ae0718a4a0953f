/*
 * books.c - the books every allocation goes through: devices, reserve,
 * release, usage, and the numbers shown apart. Each call takes the group's
 * lock for a few loads and stores.
 *
 * Each call also checks the books against what this member keeps in its
 * own memory (the caps and UUIDs it joined under, what it holds itself)
 * and the devices' check words; every VR_AUDIT_EVERY reservations and
 * before any denial, the totals against all slots. When they contradict,
 * the member is detached: it says why once and from then on keeps its own
 * books under the caps it joined with (docs/architecture.md, "Failure
 * model"). A detached member never writes into the group's books again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "registry/member.h"
#include "registry/util.h"

#define VR_AUDIT_EVERY 256

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

static inline int detached(vr_member *m)
{
	return atomic_load_explicit(&m->detached, memory_order_acquire) != 0;
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

const char *vr_audit_locked(vr_member *m)
{
	const struct vr_region_hdr *h = m->hdr;
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > VR_REGION_SLOTS)
		return "counts out of range";
	uint32_t hw = h->slots_hw, ndev = h->ndev;
	uint64_t sum[VR_MAX_DEVICES] = {0}, spilled = 0;
	for (uint32_t i = 0; i < hw; i++) {
		const struct vr_slot *s = vr_region_slot((struct vr_region_hdr *)h, i);
		if (s->state == VR_SLOT_FREE)
			continue;
		if (s->state != VR_SLOT_USED)
			return "a slot's state is neither free nor used";
		for (uint32_t d = 0; d < VR_MAX_DEVICES; d++) {
			uint64_t v = s->dev[d].in_use, sp = s->dev[d].spilled;
			if (d >= ndev ? v != 0 || sp != 0
			              : sum[d] + v < sum[d] || spilled + sp < spilled)
				return "a slot holds impossible numbers";
			sum[d] += v;
			spilled += sp;
		}
	}
	for (uint32_t d = 0; d < ndev; d++) {
		if (!vr_dev_ok(&h->dev[d]))
			return "a device's cap, UUID or total was overwritten";
		if (sum[d] != h->dev[d].in_use)
			return "a device's total differs from its members' holdings";
	}
	if (spilled != h->spilled)
		return "the group's spilled total differs from its members' holdings";
	if (h->spill_budget != m->spill_budget)
		return "the group's spill budget differs from the one this process joined with";
	for (uint32_t d = 0; d < VR_MAX_DEVICES; d++) {
		const struct vr_priv_dev *p = &m->priv[d];
		if (p->known && (d >= ndev || h->dev[d].cap != p->cap ||
		                 memcmp(h->dev[d].uuid, p->uuid, VR_UUID_LEN) != 0))
			return "a device's cap or UUID differs from the one this process joined "
			       "with";
	}
	return NULL;
}

/* Learns a device of the group this member has not named itself. */
static void priv_learn(vr_member *m, uint32_t d)
{
	struct vr_priv_dev *p = &m->priv[d];
	memcpy(p->uuid, m->hdr->dev[d].uuid, VR_UUID_LEN);
	p->cap = m->hdr->dev[d].cap;
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
	uint64_t mine = atomic_load_explicit(&p->mine, memory_order_relaxed);
	if (s->dev[dev].in_use != mine)
		return "this process's own numbers were overwritten";
	if (g->in_use < mine)
		return "a device's total is below this process's own holdings";
	return NULL;
}

/* Takes the lock and checks the books for device dev. Returns 1 with the
 * lock held, 0 when the member is (now) detached, or -EINVAL when dev is
 * not a device of the group. */
static int lock_checked(vr_member *m, int dev)
{
	if (detached(m))
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
	p->known = 1;
	if (cap)
		*cap = cap_if_new;
	return free_idx;
}

int vr_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
              uint64_t *cap)
{
	if (!m || !uuid)
		return -EINVAL;
	if (detached(m))
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
	} else if (ndev < VR_MAX_DEVICES && !m->priv[ndev].known) {
		books_begin(h);
		uint32_t d = ndev;
		memset(&h->dev[d], 0, sizeof(h->dev[d]));
		memcpy(h->dev[d].uuid, uuid, VR_UUID_LEN);
		h->dev[d].cap = cap_if_new;
		vr_dev_set_in_use(&h->dev[d], 0);
		h->ndev = d + 1;
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

/* Lock held, books checked. */
static int try_reserve_locked(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	struct vr_region_hdr *h = m->hdr;
	struct vr_region_dev *g = &h->dev[dev];
	uint64_t cur = g->in_use;
	if (bytes > g->cap || cur > g->cap - bytes) {
		if (in_use)
			*in_use = cur;
		return -ENOSPC;
	}
	struct vramctl_counts *s = &m->slot->dev[dev];
	_Atomic uint64_t *mine = &m->priv[dev].mine;
	books_begin(h);
	vr_dev_set_in_use(g, cur + bytes);
	if (g->peak < cur + bytes)
		g->peak = cur + bytes;
	s->in_use += bytes;
	if (s->peak < s->in_use)
		s->peak = s->in_use;
	atomic_store_explicit(mine, s->in_use, memory_order_relaxed);
	books_end(h);
	return 0;
}

static int reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, int count_denial)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	int locked = lock_checked(m, dev);
	if (VR_UNLIKELY(locked <= 0))
		return locked < 0 ? locked : priv_reserve(m, dev, bytes, in_use);
	const char *bad = NULL;
	if (VR_UNLIKELY(++m->audit_tick >= VR_AUDIT_EVERY)) {
		m->audit_tick = 0;
		bad = vr_audit_locked(m);
	}
	int rc = bad ? 0 : try_reserve_locked(m, dev, bytes, in_use);
	vr_region_unlock(m);
	if (VR_UNLIKELY(bad)) {
		vr_detach(m, "%s", bad);
		return priv_reserve(m, dev, bytes, in_use);
	}
	if (VR_LIKELY(rc == 0))
		return 0;

	/* Before anyone is denied, give back what dead members held, check
	 * every slot, then try once more (live members may also have freed
	 * some meanwhile). */
	vr_reclaim_dead(m);
	locked = lock_checked(m, dev);
	if (locked <= 0)
		return locked < 0 ? locked : priv_reserve(m, dev, bytes, in_use);
	bad = vr_audit_locked(m);
	if (bad) {
		vr_region_unlock(m);
		vr_detach(m, "%s", bad);
		return priv_reserve(m, dev, bytes, in_use);
	}
	rc = try_reserve_locked(m, dev, bytes, in_use);
	if (rc == 0) {
		vr_region_unlock(m);
		return 0;
	}
	struct vr_region_hdr *h = m->hdr;
	if (count_denial) {
		books_begin(h);
		m->slot->dev[dev].denied_count++;
		m->slot->dev[dev].last_denied = bytes;
		books_end(h);
	}
	if (in_use)
		*in_use = h->dev[dev].in_use;
	vr_region_unlock(m);
	return -ENOSPC;
}

int vr_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	return reserve(m, dev, bytes, in_use, 1);
}

int vr_reserve_quiet(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	return reserve(m, dev, bytes, in_use, 0);
}

void vr_release(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	int locked = lock_checked(m, dev);
	if (VR_UNLIKELY(locked <= 0)) {
		if (locked == 0)
			priv_release(m, dev, bytes);
		return;
	}
	struct vr_region_hdr *h = m->hdr;
	struct vramctl_counts *s = &m->slot->dev[dev];
	uint64_t b = bytes < s->in_use ? bytes : s->in_use;
	books_begin(h);
	s->in_use -= b;
	vr_dev_set_in_use(&h->dev[dev], h->dev[dev].in_use - b); /* checked: >= s->in_use */
	atomic_store_explicit(&m->priv[dev].mine, s->in_use, memory_order_relaxed);
	books_end(h);
	vr_region_unlock(m);
}

void vr_usage(vr_member *m, int dev, uint64_t *in_use, uint64_t *cap)
{
	uint64_t u = 0, c = UINT64_MAX;
	if (m && dev >= 0 && dev < VR_MAX_DEVICES) {
		if (lock_checked(m, dev) > 0) {
			u = m->hdr->dev[dev].in_use;
			c = m->hdr->dev[dev].cap;
			vr_region_unlock(m);
		} else if (m->priv[dev].known) {
			u = atomic_load_explicit(&m->priv[dev].mine, memory_order_relaxed);
			c = m->priv[dev].cap;
		}
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
	if (detached(m) || vr_region_lock(m) != 0)
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
		m->slot->dev[dev].denied_count++;
		m->slot->dev[dev].last_denied = bytes;
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
		m->slot->dev[dev].spilled += bytes;
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
		struct vramctl_counts *s = &m->slot->dev[dev];
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

int vr_sample(vr_member *m, int dev, struct vr_books_sample *out)
{
	if (!m || !out || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (detached(m))
		return -EIO;
	int rc = vr_region_lock(m);
	if (rc < 0)
		return rc;
	struct vr_region_hdr *h = m->hdr;
	if ((uint32_t)dev >= vr_hdr_ndev(h)) {
		vr_region_unlock(m);
		return -EINVAL;
	}
	out->cap = h->dev[dev].cap;
	out->in_use = h->dev[dev].in_use;
	out->peak = h->dev[dev].peak;
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_region_slot(h, i);
		if (s->state == VR_SLOT_USED) {
			out->slots_sum += s->dev[dev].in_use;
			out->used_slots++;
		}
	}
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
		*self = m->slot->dev[dev].in_use;
		uint32_t hw = vr_hdr_hw(h);
		for (uint32_t i = 0; i < hw; i++) {
			struct vr_slot *s = vr_region_slot(h, i);
			uint64_t b = s->dev[dev].in_use;
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
