/*
 * ptrmap.h - the process-local map from what the program holds to the
 * device and bytes charged for it (ptrmap.c).
 */
#ifndef VRAMCTL_HOOK_PTRMAP_H
#define VRAMCTL_HOOK_PTRMAP_H

#include <stdint.h>

enum vr_kind {
	VR_KIND_LINEAR = 1, /* key: device pointer */
	VR_KIND_VMM,        /* key: CUmemGenericAllocationHandle */
	VR_KIND_ARRAY,      /* key: CUarray */
	VR_KIND_MIPMAP,     /* key: CUmipmappedArray */
	VR_KIND_HOST,       /* key: host pointer (pinned) */
	VR_KIND_GRAPH,      /* key: CUgraph (bytes of its alloc nodes, not charged) */
	VR_KIND_GRAPHEXEC,  /* key: CUgraphExec (charged) */
	VR_KIND_SPILL,      /* key: device pointer of mapped pinned host memory (spill.c) */
	VR_KIND_SPILLVMM,   /* key: CUmemGenericAllocationHandle on a host location */
	VR_KIND_COUNT
};

/* Records key -> (dev, bytes). Returns 0, or -1 when memory runs out
 * (the allocation then stays uncounted: it is never released twice). */
int vr_map_put(int kind, uint64_t key, int dev, uint64_t bytes);
/* The same, for an allocation the context `owner` owns: the driver frees it
 * when that context is destroyed or reset (vr_map_take_owned). */
int vr_map_put_owned(int kind, uint64_t key, int dev, uint64_t bytes, uint64_t owner);
/* Removes every entry of a kind in the mask kinds (1 << kind) owned by
 * owner, adding its bytes to bytes[dev] (dev < ndev). Returns how many. */
int vr_map_take_owned(uint64_t owner, unsigned kinds, uint64_t bytes[], int ndev);
/* Removes key and returns 1 with its dev and bytes, or 0 when unknown. */
int vr_map_take(int kind, uint64_t key, int *dev, uint64_t *bytes);
/* Adds delta to a recorded entry's bytes (graphs). Returns 1 if found. */
int vr_map_add(int kind, uint64_t key, int dev, uint64_t delta);
/* In a child after fork: the parent's allocations are not the child's. */
void vr_map_atfork_child(void);

#endif /* VRAMCTL_HOOK_PTRMAP_H */
