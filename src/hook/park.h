/*
 * park.h - parking (park.c; --park-idle=DURATION, VRAMCTL_PARK_IDLE):
 * a process whose driver calls stay idle is parked (its device memory
 * moved to host memory by the driver's checkpoint API: ckpt.h), its
 * group's books no longer count it on the card (registry.h, "Parking"),
 * and its next driver call brings it back first (gate.h). `vramctl park`
 * and `unpark` ask it through its socket (common/parkwire.h); so does a
 * guaranteed group's process whose owed memory borrowers hold.
 */
#ifndef VRAMCTL_HOOK_PARK_H
#define VRAMCTL_HOOK_PARK_H

#include <stdint.h>

#include "hook/dev.h"

/* At the constructor, and when the program looks up the driver: with
 * --park-idle, the gate is set up (the idle clock starts at the first
 * driver call, which starts the thread that parks). Idempotent. */
void vr_park_arm(void);

/* The process used something the driver's checkpoint does not support
 * (managed memory, IPC: NVIDIA documents that a checkpoint that meets
 * them fails and may leave the process broken), named by what (a string
 * constant): from then on it is never parked, said at the next park.
 * One store; any thread. */
void vr_park_unsupported(const char *what);

/*
 * The driver refused an allocation of bytes on d (out of memory) that
 * d's group is owed by its guarantee (guarantee_park.h): idle borrowers on
 * d are asked to park, the oldest idle first, until bytes are freed or
 * none is left; with --wait, they are asked again while the wait lasts.
 * 1 when some room was made (the caller asks the driver again), else 0.
 * Called without any lock held.
 */
int vr_park_for_room(struct vr_dev *d, uint64_t bytes);

#endif /* VRAMCTL_HOOK_PARK_H */
