/*
 * books.h - the books every allocation goes through, without lanes
 * (books.c).
 */
#ifndef VRAMCTL_REGISTRY_BOOKS_H
#define VRAMCTL_REGISTRY_BOOKS_H

#include <stdint.h>

#include "registry/member.h"

/* How vr_reg_take answers a request that does not fit: with the whole
 * denial path, counted (VR_TAKE_COUNT) or not (VR_TAKE_QUIET), or at once
 * with -ENOSPC (VR_TAKE_TRY: a lane's refill, which then asks exactly).
 * VR_TAKE_FORCE is never refused at the cap: bytes the card already holds
 * (a member's overhead, vr_overhead_set). */
enum vr_take { VR_TAKE_COUNT, VR_TAKE_QUIET, VR_TAKE_TRY, VR_TAKE_FORCE };
/* The books without lanes: reserve bytes on dev (of which `spare` go to a
 * lane: not counted in the peaks) and release them. A granted take sets
 * *in_use (when not NULL) to the group's total after it. */
int vr_reg_take(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                enum vr_take how);
void vr_reg_give(vr_member *m, int dev, uint64_t bytes);

/* Takes the lock and checks the books for device dev. Returns 1 with the
 * lock held, 0 when the member is (now) detached, or -EINVAL when dev is
 * not a device of the group (spill.c). */
int vr__lock_checked(vr_member *m, int dev);

#endif /* VRAMCTL_REGISTRY_BOOKS_H */
