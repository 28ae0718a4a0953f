/*
 * guarantee_park.h - what parking asks of the guarantees (guarantee_park.c,
 * the narrow interface between parking (park.c) and the guarantees
 * (guarantee.c, the device book). A guaranteed group whose owed memory
 * borrowers hold has idle borrowers parked instead of being refused:
 *
 *   vr_gt_owed        the asker: its group holds a guarantee on d and what
 *                     its books hold there (the request included) is
 *                     within it, so the driver's refusal is a borrower's
 *                     doing;
 *   vr_gt_borrowing   a process asked to park for it: its group holds more
 *                     on d than its guarantee there (all of it, without
 *                     one), so parking it gives back borrowed memory;
 *   vr_gt_owed_to_uid that process checks the asker: the device book shows
 *                     a live guarantee of a group of the asker's user on d
 *                     not fully used;
 *   vr_gt_park_borrowers  the asking itself, for an allocation the driver
 *                     refused a group owed memory (park.c) or a guarantee
 *                     that does not fit when it is given (guarantee.c).
 *
 * Read from this process's view of the book (d->gt) and the book's own
 * view for monitors (vr_devbook_read); nothing is written.
 */
#ifndef VRAMCTL_HOOK_GUARANTEE_PARK_H
#define VRAMCTL_HOOK_GUARANTEE_PARK_H

#include <stdint.h>

#include "hook/dev.h"

int vr_gt_owed(struct vr_dev *d);
int vr_gt_borrowing(struct vr_dev *d);
int vr_gt_owed_to_uid(const struct vr_dev *d, uint32_t uid);

/*
 * Asks the idle processes on d's GPU that can be parked (NVML's list, each
 * one's socket: common/parkwire.h) to park for a guarantee, the longest
 * idle first, until bytes are freed or none is left; with --wait, again
 * every 250 ms while the wait lasts. Each decides for itself whether the
 * asker may (its group borrows there; see parkwire.h). 1 when some room
 * was made, else 0. Called without any lock held; bounded (each answer
 * within the checkpoint helper's time).
 */
int vr_gt_park_borrowers(struct vr_dev *d, uint64_t bytes);

#endif /* VRAMCTL_HOOK_GUARANTEE_PARK_H */
