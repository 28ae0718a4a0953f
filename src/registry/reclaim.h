/*
 * reclaim.h - finding dead members and giving their slots back (reclaim.c).
 */
#ifndef VRAMCTL_REGISTRY_RECLAIM_H
#define VRAMCTL_REGISTRY_RECLAIM_H

#include <stdint.h>

#include "registry/member.h"

/* 1 once a dead member's process is reaped (its memory may be in the driver
 * until then: reclaim.c). Not exact: a PID that exists counts as not reaped. */
int vr_member_gone(const struct vr_slot *s, int exact);
/* 1 if a USED slot other than self belongs to a process not yet reaped
 * (dead or alive): the group is not empty. Lock held. */
int vr_unreaped_others(struct vr_hdr *h, uint32_t self);
/* A dead, reaped member other than m whose memory NVML still lists
 * (held.c): its slot + 1 with its incarnation in *inc, or 0 when there is
 * none. A group whose only members are such keeps its books for a joiner,
 * as it does for a survivor. May ask NVML: never with the lock held. */
uint32_t vr_dead_held(vr_member *m, uint64_t *inc);
/* Returns a dead slot's bytes to the group and frees it. Lock held.
 * Returns 0, or -EBADMSG when the slot holds more than the group's total
 * or a total fails its check: the books are damaged. */
int vr_slot_reclaim_locked(vr_member *m, uint32_t i);
/* Reclaims the slots of dead members; returns how many. */
int vr_reclaim_dead(vr_member *m);
/* The same for the VR_RECLAIM_NEAR occupied slots after this member's own
 * (at a join: probing every slot made each join cost O(members) probes,
 * each O(members) in the kernel, so 256 joining at once cost O(n^3)). */
#define VR_RECLAIM_NEAR 8
int vr_reclaim_near(vr_member *m);
/* 1 if m->fd is still this member's descriptor of its door. */
int vr_fd_is_ours(vr_member *m);

#endif /* VRAMCTL_REGISTRY_RECLAIM_H */
