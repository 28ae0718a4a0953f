/*
 * pools.h - stream-ordered pools, charged by what they physically hold
 * (pools.c).
 */
#ifndef VRAMCTL_HOOK_POOLS_H
#define VRAMCTL_HOOK_POOLS_H

#include <stdatomic.h>

/* Pools known so far; 0 skips every settle. */
extern atomic_int vr_pools_count;
/* Brings every pool's charge to what it holds now (memory queries). */
void vr_pools_settle_all(void);

#endif /* VRAMCTL_HOOK_POOLS_H */
