/*
 * guarantee.h - guarantees on the card (guarantee.c, #26): memory a group
 * can always reach up to its guarantee, whatever other groups do.
 *
 * The rule, per device: an allocation of x by group g that its cap allows
 * is granted when g's use + x <= its guarantee, or x <= the card's free
 * memory less every other group's unused guarantee (and what other
 * borrowers were granted a moment ago and have not placed yet). Groups
 * without a guarantee borrow like this too. Nobody is killed to honour a
 * guarantee: a borrower's new allocations are refused (or spilled), with
 * the denial naming who holds the guarantee. The groups' guarantees and
 * use meet in the device book (registry/devbook.h), one per GPU, shared by
 * every user's processes.
 *
 * Cost: while no group holds a guarantee on a device, an allocation reads
 * one word of its book (vr_gt_check) and nothing else.
 */
#ifndef VRAMCTL_HOOK_GUARANTEE_H
#define VRAMCTL_HOOK_GUARANTEE_H

#include <stdint.h>

#include "hook/dev.h"
#include "hook/hook.h"

/* At d's setup, after its cap (policy.c): opens the device book, takes this
 * process's line, and admits the group's guarantee there (VRAMCTL_GUARANTEE)
 * when its group has none yet; a guarantee that does not fit is refused
 * (said, with the numbers) and the process borrows like any other. */
void vr_gt_setup(struct vr_dev *d);
/* The word a device without a book reads (0 forever): d->gt.word before
 * its setup (devices.c). */
extern const _Atomic uint64_t vr_gt_none;

/* After the books granted bytes with *in_use the group's total (0: served
 * from a thread's spare): 0 it stands; -1 it would take memory guaranteed
 * to another group: the bytes are given back to the books, *in_use left
 * as it was, and the refusal is kept for the denial line (vr_gt_refused). */
int vr__gt_borrow(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);
static inline int vr_gt_check(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	if (VR_LIKELY(atomic_load_explicit(d->gt.word, memory_order_relaxed) == 0))
		return 0;
	return vr__gt_borrow(d, bytes, in_use);
}

/* What the program is shown free on d (policy.c's view), under other
 * groups' guarantees: at most what it can have, the larger of its group's
 * unused guarantee and what a borrow may take (the card's free memory
 * less the other groups' unused guarantees and pending borrows); where a
 * borrow cannot be checked, its unused guarantee. Nothing while no group
 * holds a guarantee on d. 1 when a guarantee is held on d (by any group). */
int vr_gt_view(struct vr_dev *d, uint64_t *freep);

/* 1 when this thread's last refusal on d was a borrow's: then
 * vr_gt_say_denied says it (and forgets it). */
int vr_gt_refused(const struct vr_dev *d);
void vr_gt_say_denied(const struct vr_dev *d, uint64_t bytes);

/* The bytes of an allocation are on the card (after the driver's success):
 * counted against the group's guarantee in the book; a borrow granted for
 * it is no longer pending. Before a free: no longer counted (the card is
 * never counted as holding less for the group than it does). */
void vr__gt_placed(struct vr_dev *d, uint64_t bytes);
void vr__gt_leaving(struct vr_dev *d, uint64_t bytes);
static inline void vr_gt_placed(struct vr_dev *d, uint64_t bytes)
{
	if (VR_UNLIKELY(atomic_load_explicit(&d->gt.flags, memory_order_relaxed)))
		vr__gt_placed(d, bytes);
}
static inline void vr_gt_leaving(struct vr_dev *d, uint64_t bytes)
{
	if (VR_UNLIKELY(atomic_load_explicit(&d->gt.flags, memory_order_relaxed) & VR_GT_MIRROR))
		vr__gt_leaving(d, bytes);
}
/* This process's overhead on d moved by delta (card.c): counted likewise. */
void vr_gt_overhead(struct vr_dev *d, int64_t delta);
/* In a fork child: the parent's line is not the child's (devices.c). */
void vr_gt_forget(struct vr_dev *d);

#endif /* VRAMCTL_HOOK_GUARANTEE_H */
