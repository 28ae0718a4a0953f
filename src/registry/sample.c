/*
 * sample.c - the numbers a member shows apart from the books (pinned host
 * memory, denials) and what it reads back for diagnostics: samples, the
 * largest holders, the group's spec, its own slot.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "registry/knobs.h"
#include "registry/lock.h"
#include "registry/member.h"

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
	if (vr_is_detached(m) || vr_group_lock(m) != 0)
		return 0;
	if (m->slot->state == VR_SLOT_USED && m->slot->incarnation == m->incarnation)
		return 1;
	vr_group_unlock(m);
	return 0;
}

void vr_note_pinned(vr_member *m, int64_t delta)
{
	if (!m || !lock_own_slot(m))
		return;
	vr_seq_begin(m->hdr);
	add_clamped(&m->slot->host_pinned, delta);
	vr_seq_end(m->hdr);
	vr_group_unlock(m);
}

void vr_note_denied(vr_member *m, int dev, uint64_t bytes)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || !lock_own_slot(m))
		return;
	if ((uint32_t)dev < vr_hdr_ndev(m->hdr)) {
		vr_seq_begin(m->hdr);
		struct vramctl_counts *c = vr_counts_at(m->hdr, m->slot_idx, (uint32_t)dev);
		c->denied_count++;
		c->last_denied = bytes;
		vr_seq_end(m->hdr);
	}
	vr_group_unlock(m);
}

/* 1 if every device's total is its sum in sum[]. Books frozen. */
static int sums_match(const struct vr_hdr *h, const uint64_t sum[VR_MAX_DEVICES])
{
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < ndev; d++)
		if (vr_dev_total(&h->dev[d]) != sum[d])
			return 0;
	return 1;
}

static int vr_sample_call(vr_member *m, int dev, struct vr_reg_sample *out)
{
	if (!m || !out || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (vr_is_detached(m))
		return -EIO;
	int rc = vr_group_lock(m);
	if (rc < 0)
		return rc;
	struct vr_hdr *h = m->hdr;
	if ((uint32_t)dev >= vr_hdr_ndev(h)) {
		vr_group_unlock(m);
		return -EINVAL;
	}
	/* Frozen, the totals and slots hold still (unless a live member is
	 * stopped inside an operation: then the sample is as it stands). */
	uint64_t sum[VR_MAX_DEVICES];
	int dead_busy = 0, frozen = vr_reg_freeze(m, &dead_busy) == 0, summed = 0;
	for (int round = 0; frozen && round < 8; round++) {
		if (dead_busy) {
			/* A member died inside an operation: settle the totals
			 * from the slots first, and freeze again. */
			vr_reg_thaw(m, 1);
			frozen = vr_reg_freeze(m, NULL) == 0;
			if (!frozen)
				break;
		}
		dead_busy = 0;
		summed = vr_reg_slots_sum(m, sum, &dead_busy) == 0;
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
		struct vr_slot *s = vr_slot_at(h, i);
		if (s->state == VR_SLOT_USED) {
			if (!summed)
				out->slots_sum += vr_slot_held(h, i, (uint32_t)dev);
			out->used_slots++;
		}
	}
	if (summed)
		out->slots_sum = sum[dev];
	if (frozen)
		vr_reg_thaw(m, 0);
	vr_group_unlock(m);
	return 0;
}

int vr_sample(vr_member *m, int dev, struct vr_reg_sample *out)
{
	uint64_t call = vr_call_begin(); /* its waits share one bound */
	int rc = vr_sample_call(m, dev, out);
	vr_call_end(call);
	return rc;
}

int vr_holders(vr_member *m, int dev, uint64_t *self, uint64_t *peak, struct vr_holder *out, int n)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || n < 0)
		return -EINVAL;
	if (!lock_own_slot(m))
		return -EIO; /* detached, or the slot is no longer ours */
	struct vr_hdr *h = m->hdr;
	int got = 0;
	if ((uint32_t)dev < vr_hdr_ndev(h)) {
		*peak = h->dev[dev].peak;
		*self = vr_slot_used(h, m->slot_idx, (uint32_t)dev);
		uint32_t hw = vr_hdr_hw(h);
		for (uint32_t i = 0; i < hw; i++) {
			struct vr_slot *s = vr_slot_at(h, i);
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
				out[at].outside = !!(s->flags & VR_SLOT_F_LAUNCHER);
				memcpy(out[at].command, s->command, sizeof out[at].command - 1);
				out[at].command[sizeof out[at].command - 1] = '\0';
			}
		}
	}
	vr_group_unlock(m);
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
	snprintf(buf, len, "%s", n < sizeof(m->hdr->limit_spec) ? spec : ""); /* cut to len - 1 */
	/* A text that fills the field may have been cut when it was stored. */
	return n >= sizeof(m->hdr->limit_spec) - 1 || n >= len ? 1 : 0;
}

int vr_slot_index(const vr_member *m)
{
	return m ? (int)m->slot_idx : -1;
}

int vr_member_uses(vr_member *m, int dev, struct vr_member_use *out, int n)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || n < 0)
		return -EINVAL;
	if (vr_is_detached(m))
		return 0;
	struct vr_hdr *h = m->hdr;
	if ((uint32_t)dev >= vr_hdr_ndev(h))
		return 0;
	uint32_t hw = vr_hdr_hw(h);
	int got = 0;
	for (uint32_t i = 0; i < hw && got < n; i++) {
		struct vr_slot *s = vr_slot_at(h, i);
		if (s == m->slot || atomic_load_explicit((_Atomic uint32_t *)&s->state,
		                                         memory_order_acquire) != VR_SLOT_USED)
			continue;
		uint64_t inc =
		    atomic_load_explicit((_Atomic uint64_t *)&s->incarnation, memory_order_acquire);
		struct vr_member_use u = {
		    .pid = atomic_load_explicit((_Atomic int32_t *)&s->nspid_outer,
		                                memory_order_relaxed),
		    .flags =
		        atomic_load_explicit((_Atomic uint32_t *)&s->flags, memory_order_relaxed),
		    .used = vr_slot_used(h, i, (uint32_t)dev),
		    .overhead = atomic_load_explicit(
		        (_Atomic uint64_t *)&vr_counts_at(h, i, (uint32_t)dev)->overhead,
		        memory_order_relaxed),
		};
		/* A slot taken or given back meanwhile: not one member's figures. */
		if (atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
		                         memory_order_acquire) != inc ||
		    (u.flags & VR_SLOT_F_LAUNCHER))
			continue;
		out[got++] = u;
	}
	return got;
}

int vr_member_pids(vr_member *m, int32_t *out, int n)
{
	if (!m || n < 0)
		return -EINVAL;
	if (vr_is_detached(m))
		return 0;
	struct vr_hdr *h = m->hdr;
	uint32_t hw = vr_hdr_hw(h);
	int got = 0;
	for (uint32_t i = 0; i < hw && got < n; i++) {
		struct vr_slot *s = vr_slot_at(h, i);
		if (atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) !=
		        VR_SLOT_USED ||
		    (atomic_load_explicit((_Atomic uint32_t *)&s->flags, memory_order_relaxed) &
		     VR_SLOT_F_LAUNCHER))
			continue;
		out[got++] =
		    atomic_load_explicit((_Atomic int32_t *)&s->nspid_outer, memory_order_relaxed);
	}
	return got;
}

void vr_counting_set(vr_member *m, unsigned bits, int on)
{
	if (!m || vr_is_detached(m))
		return;
	_Atomic uint32_t *f = (_Atomic uint32_t *)&m->slot->flags;
	bits &= VR_SLOT_F_ALLOCATIONS | VR_SLOT_F_NO_FIGURES;
	if (on)
		atomic_fetch_or_explicit(f, bits, memory_order_relaxed);
	else
		atomic_fetch_and_explicit(f, ~bits, memory_order_relaxed);
}
