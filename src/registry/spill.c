/*
 * spill.c - one host budget for the group (docs/spill.md): host memory
 * served past a device's cap, counted under the group's lock in the
 * segment's header and in the member's slot.
 */
#include <errno.h>
#include <stdatomic.h>

#include "registry/books.h"
#include "registry/damage.h"
#include "registry/knobs.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/reclaim.h"

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
	struct vr_hdr *h = m->hdr;
	uint64_t cur = h->spilled, b = m->spill_budget;
	int rc = 0;
	if (bytes > b || cur > b - bytes) {
		rc = -ENOSPC;
	} else {
		vr_seq_begin(h);
		h->spilled = cur + bytes;
		vr_counts_at(h, m->slot_idx, (uint32_t)dev)->spilled += bytes;
		atomic_fetch_add_explicit(&m->spilled_mine, bytes, memory_order_relaxed);
		vr_seq_end(h);
		cur += bytes;
	}
	if (spilled)
		*spilled = cur;
	if (budget)
		*budget = b;
	return rc;
}

static int vr_spill_reserve_call(vr_member *m, int dev, uint64_t bytes, uint64_t *spilled,
                                 uint64_t *budget)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	for (int round = 0;; round++) {
		int locked = vr__lock_checked(m, dev);
		if (VR_UNLIKELY(locked <= 0))
			return locked < 0 ? locked : priv_spill(m, bytes, spilled, budget);
		/* Spilling is rare and slow (pinning host memory): every time, the
		 * whole books are checked first (the total and the budget too). */
		const char *bad = vr_audit_locked(m);
		if (VR_UNLIKELY(bad != NULL)) {
			vr_group_unlock(m);
			vr_detach(m, "%s", bad);
			return priv_spill(m, bytes, spilled, budget);
		}
		int rc = spill_try_locked(m, dev, bytes, spilled, budget);
		vr_group_unlock(m);
		/* As for the caps: what dead members held comes back before a
		 * refusal. */
		if (rc != -ENOSPC || round > 0 || vr_reclaim_dead(m) <= 0)
			return rc;
	}
}

int vr_spill_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *spilled, uint64_t *budget)
{
	uint64_t call = vr_call_begin(); /* its waits share one bound */
	int rc = vr_spill_reserve_call(m, dev, bytes, spilled, budget);
	vr_call_end(call);
	return rc;
}

void vr_spill_release(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	_Atomic uint64_t *mine = &m->spilled_mine;
	uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
	uint64_t b = bytes < cur ? bytes : cur;
	if (vr__lock_checked(m, dev) > 0) {
		struct vr_hdr *h = m->hdr;
		struct vramctl_counts *s = vr_counts_at(h, m->slot_idx, (uint32_t)dev);
		b = bytes < s->spilled ? bytes : s->spilled;
		vr_seq_begin(h);
		s->spilled -= b;
		h->spilled -= b < h->spilled ? b : h->spilled;
		vr_seq_end(h);
		atomic_fetch_sub_explicit(mine, b < cur ? b : cur, memory_order_relaxed);
		vr_group_unlock(m);
		return;
	}
	atomic_fetch_sub_explicit(mine, b, memory_order_relaxed);
}

uint64_t vr_spill_budget(const vr_member *m)
{
	return m ? m->spill_budget : 0;
}
