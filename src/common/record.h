/*
 * record.h - the member record file: how each process of a `vramctl run
 * --report/--trace` hands its numbers to the CLI (docs/report.md).
 *
 * The CLI makes a private directory (mkdtemp, 0700), named in
 * VRAMCTL_RECORD_DIR, with a datagram socket in it (VR_REC_SOCKET). Each
 * member's library makes one memfd at its first capped activity, sizes it
 * once (sparse), seals it against shrinking and growing (so no one can make
 * the mapping raise SIGBUS), maps it MAP_SHARED and sends its descriptor to
 * the socket (SCM_RIGHTS). Everything the member knows lives in that memory,
 * so it survives kill -9: the descriptor the CLI received keeps the pages.
 * The size is fixed here, so a member costs at most VR_REC_SIZE bytes of
 * memory (only the pages it touches). Fixed width, no pointers; the CLI
 * checks the seals, the size and every index it reads.
 *
 * Writers: the member's threads, with atomics on the counters. Readers: the
 * CLI, during the run (the trace ring) and after it (everything else).
 */
#ifndef VRAMCTL_RECORD_H
#define VRAMCTL_RECORD_H

#include <stdint.h>

#include "common/contract.h" /* VR_ENV_RECORD_DIR, VR_ENV_RECORD */

/* The CLI's socket in the record directory; members send their memfd there. */
#define VR_REC_SOCKET "r.sock"

#define VR_REC_MAGIC 0x3130434552525256ULL /* "VRRREC01" little-endian */
/* 2: overhead and the peak on the card per device. 3: refusals by
 * cause (contexts, other groups' guarantees), the peak of what the run
 * needed at once (on the card + spilled), the on-card and spill events;
 * waits and parks. */
#define VR_REC_VERSION 3u

#define VR_REC_DEVS         16          /* devices by the program's ordinal */
#define VR_REC_FRAMES       14          /* frames kept per call site */
#define VR_REC_SITES        2048        /* distinct call sites per member */
#define VR_REC_MODULES      256         /* loaded objects the sites point into */
#define VR_REC_LEAKS        65536       /* blocks listed at exit (the rest summed) */
#define VR_REC_RING         65536       /* trace records between two drains */
#define VR_REC_INTERVAL     10000000ull /* ns: the trace's interval */
#define VR_REC_PER_INTERVAL 64          /* single events per interval, then sums */

/* What an allocation-map entry (src/hook/ptrmap.c) and a leaked block are. */
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

enum vr_rec_flag { VR_REC_F_REPORT = 1, VR_REC_F_TRACE = 2, VR_REC_F_STACKS = 4 };

/* How the member ended, as far as the library can know. */
enum vr_rec_end { VR_REC_RUNNING = 0, VR_REC_EXITED = 1 /* exit handlers ran */ };

/* Trace record types. */
enum vr_rec_type {
	VR_EV_ALLOC = 1, /* bytes charged */
	VR_EV_FREE,      /* bytes returned */
	VR_EV_DENY,      /* a refused request of bytes */
	VR_EV_SPILL,     /* bytes served from host memory (spill) */
	VR_EV_SUM_ALLOC, /* count allocations of bytes in all, folded over an interval;
	                    in_use: the highest in-use the folded events reached */
	VR_EV_SUM_FREE,  /* count frees of bytes in all */
	VR_EV_OVERHEAD,  /* the member's overhead on the card is now bytes; in_use: its
	                    blocks, as for ALLOC (blocks + overhead: what the cap counts) */
	VR_EV_UNSPILL,   /* bytes of spilled memory given back */
	VR_EV_WAIT,      /* a wait for room for bytes ended: at t_ns, count ms
	                    after it began; kind 1 granted, 0 refused */
	VR_EV_PARK,      /* bytes of this device parked (kind 1: moved to host memory)
	                    or brought back (kind 0), count the ms it took */
};
/* VR_EV_SPILL and VR_EV_UNSPILL carry in in_use the member's spilled bytes
 * on dev after the event (host memory, not its blocks on the card). */

struct vr_rec_ev {
	uint64_t t_ns; /* CLOCK_MONOTONIC */
	uint64_t bytes;
	uint64_t in_use; /* this member's in-use on dev after the event */
	uint32_t count;  /* 1, or the number of events a sum folds */
	uint8_t type;
	uint8_t dev;
	uint8_t kind;
	uint8_t pad;
	uint64_t seq; /* index + 1, stored last (release): the record is complete */
};

/* One device's numbers for this member. */
struct vr_rec_dev {
	uint64_t in_use;
	uint64_t peak;
	uint64_t peak_ns;     /* CLOCK_MONOTONIC of the peak */
	uint64_t allocs;      /* successful allocation calls */
	uint64_t frees;       /* successful frees of counted memory */
	uint64_t denials;     /* every refusal: allocations and contexts, whatever the cause */
	uint64_t denied_max;  /* the largest request refused at the cap */
	uint64_t denied_need; /* the most a refusal at the cap needed: the group's in-use
	                         + request (a refused context: the card's figure with it) */
	uint64_t cap;         /* the cap in force (UINT64_MAX: none) */
	uint64_t first_block; /* the first allocation's size */
	uint64_t spilled;     /* bytes served from host memory now (spill) */
	uint64_t spilled_peak;
	/* Trace: sums folded in the current interval, not yet written. */
	uint64_t pend_allocs, pend_alloc_bytes, pend_frees, pend_free_bytes;
	uint64_t pend_max; /* the highest in-use among the folded events */
	/* What the card holds for the member: its overhead (context,
	 * modules, the driver's own use: NVML's per-process figure less its
	 * blocks), now and at most, and the most it held on the card at once
	 * (blocks as charged + overhead). Valid where card_known is 1: the
	 * library measured the overhead at least once (never when the cap
	 * counts allocations only). */
	uint64_t overhead;
	uint64_t overhead_peak;
	uint64_t card_peak;
	uint64_t card_peak_ns; /* CLOCK_MONOTONIC of card_peak */
	/* Refusals that a larger cap would not have granted: for other
	 * groups' guarantees (the card's free memory was theirs); and the new
	 * contexts the cap refused (counted in denials, denied_need too). */
	uint64_t gt_denials, gt_denied_max;
	uint64_t ctx_denials, ctx_denied_max;
	/* The most the member needed at once: on the card (card_peak's figure)
	 * plus what it had spilled to host memory. */
	uint64_t need_peak;
	unsigned char uuid[16];
	uint32_t used;       /* 1 once the device was seen */
	uint32_t card_known; /* 1 once the overhead was measured */
	/* Waits for room: how many, how many ended with the room, the
	 * time they took in all and the longest; and parks of this process
	 * (its bytes here moved to host memory), how many, the most parked. */
	uint64_t waits, waits_granted, wait_ns, wait_ns_max;
	uint64_t parks, parked_max;
};

/* A call site: return addresses, each with the module it falls in. */
struct vr_rec_site {
	uint32_t hash;
	uint16_t nframes;
	uint16_t pad;
	uint64_t pc[VR_REC_FRAMES];
	uint16_t module[VR_REC_FRAMES]; /* index into modules, 0xffff unknown */
};

struct vr_rec_module {
	uint64_t base; /* dli_fbase: where the object is loaded */
	char path[248];
};

/* A block still allocated when the member's exit handlers ran. */
struct vr_rec_leak {
	uint64_t key; /* device pointer, handle... */
	uint64_t bytes;
	int32_t dev;   /* ordinal */
	uint16_t site; /* call site + 1, 0 none */
	uint8_t kind;  /* enum vr_kind of src/hook/hook.h */
	uint8_t pad;
};

/* Frameworks whose caching allocators keep freed memory (at exit: a cache,
 * not a leak). Set from the objects loaded when exit handlers ran. */
enum vr_rec_fw { VR_FW_TORCH = 1, VR_FW_TF = 2, VR_FW_JAX = 4, VR_FW_CUPY = 8 };

struct vr_rec_hdr {
	uint64_t magic; /* stored last at creation */
	uint32_t version;
	uint32_t hdr_size;
	uint64_t file_size;
	int32_t pid;
	uint32_t flags;         /* vr_rec_flag */
	uint64_t start_mono_ns; /* CLOCK_MONOTONIC when the member started recording */
	uint64_t start_real_ns; /* CLOCK_REALTIME at the same moment */
	uint64_t proc_start;    /* /proc/self/stat field 22 */
	uint64_t end_mono_ns;   /* when exit handlers ran (0: they did not) */
	uint32_t end;           /* vr_rec_end */
	uint32_t frameworks;    /* vr_rec_fw */
	char command[128];
	uint64_t pinned, pinned_peak;
	uint32_t growth;
	uint32_t nsites;           /* sites [0, nsites) are complete */
	uint32_t nmodules;         /* modules [0, nmodules) are complete */
	uint32_t nleaks;           /* written at exit */
	uint64_t leaks_more_bytes; /* past VR_REC_LEAKS */
	uint64_t leaks_more_count;
	/* The trace ring: the member stores at head (fetch-add), the CLI reads
	 * from tail; full rings fold events into sums. */
	uint64_t head;
	uint64_t tail;
	uint64_t ring_folded; /* events folded because the ring was full */
	uint64_t interval;    /* the current interval (t / VR_REC_INTERVAL) */
	uint64_t in_interval; /* single events written in it */
	uint32_t site_lock;   /* spinlock for adding a site */
	uint32_t pad0;
	struct vr_rec_dev dev[VR_REC_DEVS];
};

#define VR_REC_HDR_SIZE    8192u
#define VR_REC_OFF_SITES   VR_REC_HDR_SIZE
#define VR_REC_OFF_MODULES (VR_REC_OFF_SITES + VR_REC_SITES * sizeof(struct vr_rec_site))
#define VR_REC_OFF_LEAKS   (VR_REC_OFF_MODULES + VR_REC_MODULES * sizeof(struct vr_rec_module))
#define VR_REC_OFF_RING    (VR_REC_OFF_LEAKS + VR_REC_LEAKS * sizeof(struct vr_rec_leak))
#define VR_REC_SIZE        (VR_REC_OFF_RING + VR_REC_RING * sizeof(struct vr_rec_ev))

_Static_assert(sizeof(struct vr_rec_hdr) <= VR_REC_HDR_SIZE, "record header too large");
_Static_assert(sizeof(struct vr_rec_ev) == 40, "trace record layout");

#define VR_REC_SECTION(h, off, type) ((type *)(void *)((unsigned char *)(h) + (off)))

#endif /* VRAMCTL_RECORD_H */
