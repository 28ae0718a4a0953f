/*
 * segcopy.h - a reader's copy of one group's segment, taken under its
 * seqlock without the group's lock (segcopy.c).
 */
#ifndef VRAMCTL_REGISTRY_SEGCOPY_H
#define VRAMCTL_REGISTRY_SEGCOPY_H

#include <stdint.h>

#include "registry/layout.h"
#include "vramctl/registry.h"

/* One slot, copied compactly (its devices go to a separate array, only as
 * many as the group has): a monitor reads 1,000 members in a few hundred
 * kilobytes instead of touching megabytes of fresh memory. */
struct vr_slot_copy {
	uint32_t idx;
	int32_t pid;
	uint64_t start_time;
	int32_t nspid_outer;
	uint32_t uid;
	uint64_t host_pinned;
	uint64_t ipc_ns;
	uint32_t flags;
	char command[VR_COMMAND_MAX];
	uint64_t lanes[VR_LANES]; /* lane words: spare held, not handed out */
	struct vr_slot_wait wait; /* waiting and parking */
};

struct vr_seg_copy {
	/* Scratch kept from group to group (the caller frees sc and sd). */
	struct vr_slot_copy *sc;   /* VR_SLOTS */
	struct vramctl_counts *sd; /* VR_SLOTS x sd_ndev */
	uint64_t *pk;              /* VR_SLOTS x sd_ndev: parked bytes */
	uint32_t sd_ndev;
	/* The copy: the USED slots sc[0, nsc), slot k's numbers on device d
	 * at sd[k * ndev + d] (in_use: what it handed out, lanes' spare not
	 * counted), and the header's fields (gname and spec terminated). */
	int nsc;
	uint32_t ndev;
	int consistent; /* a copy of one moment whose totals are the slots' sums */
	int mismatch;   /* quiet copies in a row differ alike: the books are damaged */
	int seq_clean;  /* the copy kept was taken between two locked writes */
	struct vr_hdr_dev gdev[VR_MAX_DEVICES];
	char gname[VR_GROUP_FIELD], spec[VR_SPEC_MAX];
	uint32_t growth;
	uint64_t spill_budget, spilled;
	uint64_t denials;
	uint64_t park_budget, parked;
	uint32_t lockword;
	struct vr_changes changes;
};

/* Copies the segment h (attached read-only) into *c. Returns 0, or -ENOMEM
 * (the scratch could not be allocated). */
int vr__seg_copy(struct vr_seg_copy *c, const struct vr_hdr *h);

#endif /* VRAMCTL_REGISTRY_SEGCOPY_H */
