/*
 * guarantee.h - guarantees on the card (guarantee.c, #26, #38): memory a
 * group can always reach up to its guarantee, whatever other groups do.
 *
 * The rule, per device: an allocation of x by group g that its cap allows
 * is granted when g's use + x <= its guarantee, or x <= the card's free
 * memory less every other group's unused guarantee less what other
 * borrowers were granted and have not placed yet. Groups without a
 * guarantee borrow like this too. Nobody is killed to honour a guarantee:
 * a borrower's new allocations are refused (or spilled), with the denial
 * naming who holds the guarantee. The guarantees meet in the device book
 * (registry/devbook.h), one per GPU, which root writes and this process
 * only reads: nothing a neighbour holds can delay an allocation.
 *
 * Cost: while no group holds a guarantee on a device, an allocation reads
 * one word of its book (vr_gt_check) and nothing else.
 */
#ifndef VRAMCTL_HOOK_GUARANTEE_H
#define VRAMCTL_HOOK_GUARANTEE_H

#include <stdint.h>

#include "hook/dev.h"
#include "hook/hook.h"

/* At d's setup, after its cap (policy.c): opens the device book (asking
 * root's guard service, or as root making it, when the GPU has none), finds
 * the group's entry and, with VRAMCTL_GUARANTEE, has its guarantee admitted
 * (as root directly, else through the service); a guarantee that cannot be
 * given is said, and the process borrows like any other. */
void vr_gt_setup(struct vr_dev *d);
/* The word a device without a book reads (0 forever): d->gt.word before
 * its setup (devices.c). */
extern const _Atomic uint64_t vr_gt_none;

/* After the books granted bytes with *in_use the group's total (0: served
 * from a thread's spare): 0 it stands (a borrow's bytes are then pending
 * until vr_gt_answered); -1 it would take memory guaranteed to another
 * group, or cannot be checked: the bytes are given back to the books,
 * *in_use left as it was, and the refusal is kept for the denial line
 * (vr_gt_refused). */
int vr__gt_borrow(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);
static inline int vr_gt_check(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	if (VR_LIKELY(atomic_load_explicit(d->gt.word, memory_order_relaxed) == 0))
		return 0;
	return vr__gt_borrow(d, bytes, in_use);
}

/* This thread's borrows in flight (granted, the driver not answered yet). */
extern __thread int vr__gt_inflight __attribute__((tls_model("initial-exec")));
void vr__gt_settle(void);
/* The driver answered this thread's allocation (placed it or failed), or
 * the grant was undone without it: what its borrows hold on the board
 * ends. Called after every driver call that follows a grant (VR_DRIVER,
 * wrap.h; pools.c) and where a grant made after the driver's call (a
 * pitch or an array wider than charged) or before a refusal (a graph's
 * devices) is settled (alloc.c, array.c, graph.c). */
static inline void vr_gt_answered(void)
{
	if (VR_UNLIKELY(vr__gt_inflight))
		vr__gt_settle();
}

/* 1 when this thread's last refusal on d was a borrow's: then
 * vr_gt_say_denied says it (and forgets it). */
int vr_gt_refused(const struct vr_dev *d);
void vr_gt_say_denied(const struct vr_dev *d, uint64_t bytes);

/* The bytes of an allocation are on the card (after the driver's success):
 * counted against the group's guarantee in the book. Before a free: no
 * longer counted (the card is never counted as holding less for the group
 * than it does). */
void vr__gt_placed(struct vr_dev *d, uint64_t bytes);
void vr__gt_leaving(struct vr_dev *d, uint64_t bytes);
static inline void vr_gt_placed(struct vr_dev *d, uint64_t bytes)
{
	if (VR_UNLIKELY(atomic_load_explicit(&d->gt.flags, memory_order_relaxed) & VR_GT_MIRROR))
		vr__gt_placed(d, bytes);
}
static inline void vr_gt_leaving(struct vr_dev *d, uint64_t bytes)
{
	if (VR_UNLIKELY(atomic_load_explicit(&d->gt.flags, memory_order_relaxed) & VR_GT_MIRROR))
		vr__gt_leaving(d, bytes);
}
/* This process's overhead on d moved by delta (card.c): counted likewise. */
void vr_gt_overhead(struct vr_dev *d, int64_t delta);
/* In a fork child: the parent's view of the book is not the child's
 * (devices.c). */
void vr_gt_forget(struct vr_dev *d);

#endif /* VRAMCTL_HOOK_GUARANTEE_H */
