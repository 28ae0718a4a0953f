/*
 * ptrmap.h - the process-local map from what the program holds to the
 * device and bytes charged for it (ptrmap.c).
 */
#ifndef VRAMCTL_HOOK_PTRMAP_H
#define VRAMCTL_HOOK_PTRMAP_H

#include <stdint.h>

#include "common/record.h" /* enum vr_kind: the report names the kinds too */

/* Records key -> (dev, bytes, call site + 1 or 0). Returns 0, or -1 when
 * memory runs out (the allocation then stays uncounted: it is never
 * released twice). */
int vr_map_put(int kind, uint64_t key, int dev, uint64_t bytes, uint16_t site);
/* The same, for an allocation the context `owner` owns: the driver frees it
 * when that context is destroyed or reset (vr_map_take_owned). */
static inline int vr_map_put_owned(int kind, uint64_t key, int dev, uint64_t bytes, uint64_t owner,
                                   uint16_t site);
/* Removes every entry of a kind in the mask kinds (1 << kind) owned by
 * owner, adding its bytes to bytes[dev] (dev < ndev), or pinned host
 * memory's to *host. Returns how many. */
int vr_map_take_owned(uint64_t owner, unsigned kinds, uint64_t bytes[], int ndev, uint64_t *host);
/* Removes key and returns 1 with its dev, bytes and site (site may be NULL),
 * or 0 when unknown. */
static inline int vr_map_take(int kind, uint64_t key, int *dev, uint64_t *bytes, uint16_t *site);
/* Calls fn for every entry, one stripe locked at a time (record.c, at exit). */
typedef void (*vr_map_walk_fn)(void *arg, int kind, uint64_t key, int dev, uint64_t bytes,
                               uint16_t site);
void vr_map_walk(vr_map_walk_fn fn, void *arg);
/* Adds delta to a recorded entry's bytes (graphs). Returns 1 if found. */
int vr_map_add(int kind, uint64_t key, int dev, uint64_t delta);
/* Decides whether threads may own their stripes (membarrier), best while
 * the process has one thread: registering with more waits for an RCU grace
 * period (about 10 ms). The library's constructor calls it; the first
 * allocation does otherwise. */
void vr_map_prepare(void);

#include "hook/ptrmap_table.h" /* the inline paths above */

#endif /* VRAMCTL_HOOK_PTRMAP_H */
