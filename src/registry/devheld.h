/*
 * devheld.h - what a guaranteed group has on the card (devheld.c): a
 * System V semaphore set per entry of the device book, created by root and
 * given to the group's user (mode 0644: the others only read it). Each
 * member adds its bytes in units with SEM_UNDO, so when a member dies the
 * kernel takes its part back at once; a reader adds up the values. Only
 * the group's user can change them, and what it can do with that is lend
 * less of its own guarantee (a sum read too low leaves more unused).
 *
 * A set readers cannot trust (removed, replaced, another IPC namespace's,
 * made by anyone but root) reads as nothing held: the whole guarantee
 * unused, lent to nobody.
 */
#ifndef VRAMCTL_REGISTRY_DEVHELD_H
#define VRAMCTL_REGISTRY_DEVHELD_H

#include <pthread.h>
#include <stdint.h>

#include "registry/devdoor.h"

/* Root: a new set for an entry of user uid on a card of capacity bytes,
 * into e's semid, semkey, nsems and unit. 0 or a negative errno. */
int vr__held_create(struct vr_deventry *e, uint32_t uid, uint64_t capacity);
/* Root: removes the entry's set (nothing when it is not the entry's). */
void vr__held_remove(const struct vr_deventry *e);

/* The group's bytes on the card as its members published them (units
 * rounded down per member: never more than they hold); 0 when the set is
 * not one root made for this entry. */
uint64_t vr__held_read(const struct vr_deventry *e);
/* The two halves of it: 1 when the set is the one root made for e (its
 * key, maker, owner, mode and size: one semctl), and the sum (one semctl;
 * 0 when the set is gone). A set's identity changes only when it is
 * removed, and its id comes back only after the kernel's sequence has
 * wrapped: a reader may check it once per entry. */
int vr__held_valid(const struct vr_deventry *e);
uint64_t vr__held_sum(const struct vr_deventry *e);

/* A member's part, in this process. */
struct vr_heldpub {
	pthread_mutex_t mu;
	int semid; /* -1: not publishing */
	uint32_t nsems;
	uint64_t unit;
	uint64_t bytes;             /* this process's bytes on the card */
	uint32_t pub[VR_HELD_SEMS]; /* units it added to each semaphore */
};
void vr__held_init(struct vr_heldpub *p);
/* Starts publishing into the entry's set (this process's user owns it). */
void vr__held_start(struct vr_heldpub *p, const struct vr_deventry *e);
/* This process's bytes moved by delta: the units follow (only what fits;
 * a set that is gone stops publishing). */
void vr__held_move(struct vr_heldpub *p, int64_t delta);

#endif /* VRAMCTL_REGISTRY_DEVHELD_H */
