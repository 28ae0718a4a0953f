/*
 * dev.h - one of the program's devices as every layer of the library sees
 * it: its UUID, physical total, the cap in force and where its bytes are
 * held. The table and the look-ups are devices.h's; the fields are filled
 * by devices.c (identity), policy.c (cap), books.c (reg) and spill.c.
 */
#ifndef VRAMCTL_HOOK_DEV_H
#define VRAMCTL_HOOK_DEV_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/cuda_api.h"

struct vr_own_dev;

struct vr_dev {
	atomic_int ready; /* 1 once filled in */
	int ordinal;      /* as the program numbers it */
	CUdevice handle;
	unsigned char uuid[16];
	char uuid_text[48];
	uint64_t phys_total;
	/* The cap in force (UINT64_MAX: none); the group's, which `vramctl
	 * limit` may change while the program runs (books.c, vr_books_cap_sync). */
	_Atomic uint64_t cap;
	int16_t reg;    /* registry device index (< VR_MAX_DEVICES), -1: per-process books */
	int16_t nouter; /* outer groups it is counted in too (outer.h) */
	/* vr_caps_taken (registry.h) when the cap was last taken from the
	 * books (policy.c): a grant that finds it moved takes it again. */
	_Atomic unsigned caps_seen;
	_Atomic uint64_t local_in_use; /* per-process books */
	/* Per-process books under a cap, as monitors see them (registry/own.h;
	 * books.c keeps its in_use and peak): NULL when none is published. */
	struct vr_own_dev *own;
	atomic_int host_vmm;          /* cuMemCreate on the host (spill): 0 unknown, 1 yes, -1 no */
	atomic_int host_numa;         /* CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (-1: none) */
	_Atomic uint64_t first_block; /* this process's first allocation on it (the hint) */
	/* The one live linear block charged less than the pages the card takes
	 * for it ("all that is left", policy.h): its address, VR_SHORT_PENDING
	 * while the driver is being asked, 0 when there is none. */
	_Atomic uint64_t short_block;
	/* What the card holds for this process beyond its blocks (card.c). */
	struct vr_card {
		_Atomic uint64_t watch;    /* books' total above which a grant is checked */
		_Atomic uint64_t overhead; /* charged for this process's overhead */
		_Atomic uint64_t extra;    /* other members' overhead not yet charged, as seen */
		_Atomic uint64_t others;   /* other members' charged overhead, as seen */
		_Atomic uint64_t seen_ns;  /* when the figures were last taken (0: never) */
		atomic_int busy;           /* a thread is taking them */
		atomic_int said;           /* lines said (card.c) */
		/* What this process held in the books at the last look (its
		 * grant being checked left out): a change since means the
		 * figures are old. */
		_Atomic uint64_t seen_held;
		/* VR_CARD_* (card.h): the figures may be older than a change
		 * NVML does not show yet; the group is near its cap. And the
		 * grants of 1 MiB or less checked near the cap whose driver call
		 * has not returned (each may take a new page: card.h). */
		_Atomic uint32_t flags, small;
		/* Under busy: this process's blocks at the last look, since
		 * when they held still, and since when NVML has not listed
		 * the process. */
		uint64_t booked, stable_ns, absent_ns;
	} card;
	/* Guarantees on the card (guarantee.c, #26, #38): the device book
	 * all groups on this GPU share, which root writes. */
	struct vr_gt {
		/* The book's sum of live guarantees, or a word that stays 0
		 * when there is no book (set before the device is ready): 0
		 * lets every allocation through unasked. */
		const _Atomic uint64_t *word;
		struct vr_devbook *book; /* NULL: none */
		uint64_t guarantee;      /* this group's here (0: none) */
		/* VR_GT_MIRROR: this process's bytes are counted in its
		 * group's held words. */
		atomic_uint flags;
	} gt;
} __attribute__((aligned(64))); /* 256 bytes: the table is indexed by a shift */

enum { VR_GT_MIRROR = 1u << 0 };

/* Is d capped? An uncapped device is counted and never denied. */
static inline int vr_dev_capped(const struct vr_dev *d)
{
	return atomic_load_explicit(&d->cap, memory_order_relaxed) != UINT64_MAX;
}

#endif /* VRAMCTL_HOOK_DEV_H */
