/*
 * lock.h - the group's lock and freezing the books under it (lock.c).
 */
#ifndef VRAMCTL_REGISTRY_LOCK_H
#define VRAMCTL_REGISTRY_LOCK_H

#include <stdint.h>

#include "registry/member.h"

/* A lock id for a member in slot slot_idx (unique per member, in practice). */
uint32_t vr_lock_id(uint32_t slot_idx);

/*
 * Freezes every device's total (lock held) and waits until no USED slot
 * has an operation in flight, so the slots and totals hold still: 0, or
 * -ETIMEDOUT when a live member stays in the middle of one past the bound
 * (stopped), or -EUCLEAN when a live member's count in flight stays while
 * it runs (phantom operations: damage, lock.c): the totals are then thawed
 * unchanged. A slot whose owner is dead is not waited for; *dead_busy (when
 * not NULL) is set when one was busy (it died inside an operation: the
 * totals may count it). -EBADMSG: a total's check failed (damage); nothing
 * is left frozen.
 */
int vr_reg_freeze(vr_member *m, int *dead_busy);
/* Thaws the totals, each set to the sum of the USED slots (recompute != 0)
 * or left as it was. Lock held, books frozen. Returns 0, or -ETIMEDOUT when
 * a slot did not settle (the totals are then left as they were). */
int vr_reg_thaw(vr_member *m, int recompute);
/* Slot i's word for device d once no operation is in flight on it, or as
 * it is when its owner died inside one (*dead_busy set). Lock held, books
 * frozen: an operation that starts now undoes itself at once. 0, or
 * -ETIMEDOUT when a live member stays inside one past the bound, or
 * -EUCLEAN when its count in flight is phantom (lock.c). */
int vr_slot_settled(vr_member *m, uint32_t i, uint32_t d, uint64_t *word, int *dead_busy);
/* The sum of the USED slots' settled words, per device. 0, -ETIMEDOUT or
 * -EUCLEAN (vr_slot_settled). */
int vr_reg_slots_sum(vr_member *m, uint64_t sum[VR_MAX_DEVICES], int *dead_busy);

/* Takes the group's lock: 0, or -ETIMEDOUT after vr_lock_bound_ns when a
 * live member keeps it. Takes over a lock held by anything else (a dead
 * member, damage) and recovers what it may have left half done. */
int vr_group_lock(vr_member *m);
void vr_group_unlock(vr_member *m);

#endif /* VRAMCTL_REGISTRY_LOCK_H */
