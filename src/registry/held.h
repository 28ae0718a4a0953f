/*
 * held.h - dead members whose memory NVML still lists (held.c).
 */
#ifndef VRAMCTL_REGISTRY_HELD_H
#define VRAMCTL_REGISTRY_HELD_H

#include <stdint.h>

#include "registry/member.h"

/* 1 if slot i (USED, its owner dead and reaped, incarnation inc) must stay
 * held because NVML still lists its process on a device where it holds
 * bytes, within the bound; 0 when it may be reclaimed (no probe, nothing
 * held, NVML cannot tell, or the bound has passed). May ask NVML: never
 * call it with the group's lock held. */
int vr_dead_on_gpu(vr_member *m, uint32_t i, const struct vr_slot *s, uint64_t inc);

#endif /* VRAMCTL_REGISTRY_HELD_H */
