/*
 * damage.c - when the group's books cannot be trusted: the full check of
 * the books against the slots (the audit), and what a member does when a
 * check fails (it is detached: it keeps its own books from then on,
 * docs/architecture.md, "Failure model").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "registry/damage.h"
#include "registry/lock.h"
#include "registry/member.h"

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
/* ---- checks */

const char vr__impossible[] = "a slot holds impossible numbers";
const char vr__phantom[] = "a live member's count of operations in flight stays while it "
                           "runs: no operation holds it";

static const char *audit_frozen(vr_member *m, const uint64_t sum[VR_MAX_DEVICES], int dead_busy)
{
	const struct vr_hdr *h = m->hdr;
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > VR_SLOTS)
		return "counts out of range";
	uint32_t hw = h->slots_hw, ndev = h->ndev;
	uint64_t spilled = 0;
	for (uint32_t i = 0; i < hw; i++) {
		const struct vr_slot *s = vr_slot_at((struct vr_hdr *)h, i);
		if (s->state == VR_SLOT_FREE)
			continue;
		if (s->state != VR_SLOT_USED)
			return "a slot's state is neither free nor used";
		/* The group's devices only: a slot's numbers for a device not
		 * yet added are checked when it is added (vr_device). Reading
		 * all VR_MAX_DEVICES of every slot made each join's audit read
		 * every member's whole slot, with the lock held. */
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t sp = vr_counts_at((struct vr_hdr *)h, i, d)->spilled;
			if (spilled + sp < spilled)
				return vr__impossible;
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
		if (p->known && (d >= ndev || memcmp(h->dev[d].uuid, p->uuid, VR_UUID_LEN) != 0))
			return "a device's UUID differs from the one this process joined with";
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
	int rc = vr_reg_freeze(m, &dead_busy);
	if (rc == -EBADMSG)
		return "a device's total was overwritten";
	if (rc == -EUCLEAN)
		return vr__phantom;
	if (rc != 0) /* a live member stopped inside an operation: not now */
		return NULL;
	if ((rc = vr_reg_slots_sum(m, sum, &dead_busy)) != 0) {
		vr_reg_thaw(m, 0);
		return rc == -EUCLEAN ? vr__phantom : NULL;
	}
	const char *bad = audit_frozen(m, sum, dead_busy);
	vr_reg_thaw(m, !bad && dead_busy);
	return bad;
}
