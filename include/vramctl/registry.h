/*
 * vramctl/registry.h - read-only view of the vramctl registry, for monitors.
 *
 * A snapshot is a consistent copy of every group region in a registry
 * directory: the groups with their per-device caps and totals, and every
 * member process with its own per-device numbers. Reading never blocks a
 * writer for longer than one copy of a region, and never changes anything.
 *
 * All sizes are bytes. Functions return 0 or a negative errno.
 */
#ifndef VRAMCTL_PUBLIC_REGISTRY_H
#define VRAMCTL_PUBLIC_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VRAMCTL_UUID_TEXT_LEN 41 /* "GPU-" + 36 + NUL */

enum vramctl_proc_state {
	VRAMCTL_PROC_ALIVE = 0, /* its liveness lock is held */
	VRAMCTL_PROC_DEAD = 1,  /* gone; its memory not yet reclaimed */
};

struct vramctl_group_dev {
	char uuid[VRAMCTL_UUID_TEXT_LEN];
	uint64_t cap;    /* UINT64_MAX: no cap */
	uint64_t in_use; /* sum over live members */
	uint64_t peak;
	uint64_t dead_in_use;  /* held by dead members, returned at the next reclaim */
	uint64_t books_in_use; /* what the cap is checked against: in_use + dead_in_use
	                          (both read from one consistent copy when consistent),
	                          plus what members' threads hold spare (lanes:
	                          docs/architecture.md) */
	uint64_t spilled;      /* host memory the group's members hold past this cap
	                          (docs/spill.md), dead members' included until reclaimed */
	uint64_t overhead;     /* the part of in_use + dead_in_use that is the members'
	                          overhead on the card (vramctl_counts.overhead) */
};

/* What a member's cap counts on its devices (vramctl_proc.counting). */
enum vramctl_counting {
	VRAMCTL_COUNTING_CARD = 0,        /* what the card holds for it (allocations +
	                                     overhead, NVML's per-process figure) */
	VRAMCTL_COUNTING_ALLOCATIONS = 1, /* allocations only, as asked (--count) */
	VRAMCTL_COUNTING_NO_FIGURES = 2,  /* allocations only: the driver does not
	                                     tell this process's use per process */
};

/*
 * One member's numbers for one device: the same six words in the region
 * file, in a snapshot and in the monitor's model, copied whole from one to
 * the next. VRAMCTL_COUNTS_FIELDS lets a struct name them directly too:
 *   union { struct vramctl_counts counts; struct { VRAMCTL_COUNTS_FIELDS }; };
 *   in_use        bytes held now on the card, as the cap counts them: what
 *                 the process allocated plus its overhead
 *   peak          the most held at once (on the card, overhead included)
 *   denied_count  requests refused at the cap
 *   last_denied   size of the last refused request
 *   spilled       bytes served from host memory past the cap
 *   overhead      the part of in_use the process did not allocate through
 *                 vramctl: its context, modules, local memory and the
 *                 driver's own use, as NVML counts the process on the card
 *                 less what it allocated (0 when the cap counts
 *                 allocations only: see vramctl_proc.counting)
 */
#define VRAMCTL_COUNTS_FIELDS uint64_t in_use, peak, denied_count, last_denied, spilled, overhead;
struct vramctl_counts {
	VRAMCTL_COUNTS_FIELDS
};

struct vramctl_proc_dev {
	char uuid[VRAMCTL_UUID_TEXT_LEN];
	union {
		struct vramctl_counts counts;
		struct {
			VRAMCTL_COUNTS_FIELDS
		};
	};
	/* Addition: while the member is parked, what it held on this
	 * device, now in host memory (not in in_use). */
	uint64_t parked;
};

/* Addition: who a member is, as it recorded at its join (its own
 * reading of /proc/self/cgroup and of its environment). */
struct vramctl_proc_ident {
	uint64_t cgns;              /* the inode of its cgroup namespace (0: unknown) */
	const char *cgroup;         /* /proc/self/cgroup's text as it saw it ("" unknown) */
	const char *pod_name;       /* VRAMCTL_POD_NAME ("" none), at most 253 bytes */
	const char *pod_namespace;  /* VRAMCTL_POD_NAMESPACE, at most 63 */
	const char *container_name; /* VRAMCTL_CONTAINER_NAME, at most 63 */
};

struct vramctl_proc {
	pid_t pid;           /* as the process saw itself (its own namespace) */
	pid_t host_pid;      /* in the reader's namespace, 0 if unknown */
	int host_pid_seen;   /* 1: host_pid was seen alive as this member while the
	                        snapshot was taken (its lock's holder, or its /proc
	                        start time), so nobody needs to ask again */
	uint64_t start_time; /* /proc/PID/stat field 22 (clock ticks since boot) */
	uid_t uid;           /* the books' owner, as the reader sees it: every member
	                        runs as it (one in a user namespace sees itself as
	                        another uid); a member without its PID lock is
	                        matched to a process only if that process runs as it */
	char user[32];
	char command[128];
	char group[65];
	enum vramctl_proc_state state;
	uint64_t host_pinned;
	/* Addition: the PID the member recorded for itself in the outermost
	 * PID namespace it could see (the first NSpid entry; the host's PID
	 * where it shared the host's /proc), 0 if unknown. Kept for dead
	 * members too: NVML may still list that PID while the driver tears
	 * the process's contexts down. */
	pid_t outer_pid;
	enum vramctl_counting counting; /* Addition */
	/* Addition: the inode of the member's IPC namespace (N in
	 * "ipc:[N]", the link /proc/PID/ns/ipc), as it recorded it at its join
	 * (its books are handed over whatever its namespace), when that is
	 * not the reader's own: a container's. 0 when it is the reader's own. */
	uint64_t ipc_ns;
	int ndev;
	/* ndev entries (the group's devices), kept by the snapshot; NULL when
	 * ndev is 0. A pointer, not a fixed array of 64: a thousand members'
	 * records would otherwise be 5.6 MB of fresh memory to fault in. */
	struct vramctl_proc_dev *dev;
	/* Addition: its identity record, for a live member that wrote
	 * one (NULL otherwise: dead, or a member of an older build). The
	 * cgroups are its claim until checked against the kernel's (the
	 * monitor does: identity.c); the names are its claim, as its
	 * environment is. */
	const struct vramctl_proc_ident *ident;
	/* Addition: a wait for room, when wait_dev >= 0 (an index into
	 * dev[]): the bytes asked, those set aside for it already (in the
	 * group's books, not in in_use), since when (ns since the epoch). */
	int wait_dev;
	uint64_t wait_bytes, wait_claimed, wait_since;
	/* Addition: parked (its device memory moved to host memory:
	 * dev[].parked) since parked_since (ns since the epoch); parkable: it
	 * runs with --park-idle; idle_since: its last driver call seen while
	 * it is parkable (ns since the epoch, 0 unknown). */
	int parked, parkable;
	uint64_t parked_since, idle_since;
	/* Addition: a launcher (`vramctl run`) holding the group open
	 * for its command: not one of its members. */
	int launcher;
};

/* A cap changed while the group ran (`vramctl limit`). */
struct vramctl_cap_change {
	uint64_t when; /* seconds since the epoch */
	uint32_t uid;  /* who changed it */
	int32_t pid;   /* the process that did, in its own namespace */
	char uuid[VRAMCTL_UUID_TEXT_LEN];
	uint64_t old_cap; /* UINT64_MAX: none (uncapped, or not used yet) */
	uint64_t new_cap;
};
#define VRAMCTL_CAP_CHANGES 16

struct vramctl_group {
	char name[65];
	char limit_spec[128];
	int growth;
	uid_t owner;
	int nmembers; /* live members */
	int ndev;
	struct vramctl_group_dev dev[64];
	/* 1 when the copy was taken between two
	 * writes (all numbers of the group agree); 0 when writers kept changing
	 * the books for the whole read (each number is real, sums may differ). */
	int consistent;
	/* Addition (spill): the group's host budget (0: spill off) and what all
	 * its members have spilled on every device, counted against it. */
	uint64_t spill_budget;
	uint64_t spilled;
	/* Addition (caps changed by vramctl limit): the last nchanges cap
	 * changes, oldest first, of changes_total made since the group
	 * started. */
	uint64_t changes_total;
	int nchanges;
	struct vramctl_cap_change changes[VRAMCTL_CAP_CHANGES];
	/* Addition: refusals counted by all its members on every device
	 * since the group started, those of members gone included. */
	uint64_t denials;
	/* Addition: the host budget for parked members (0: none) and
	 * what they hold against it; members waiting for room now. */
	uint64_t park_budget, parked;
	int waiting;
};

struct vramctl_snapshot {
	int ngroups;
	struct vramctl_group *groups;
	int nprocs;
	struct vramctl_proc *procs;
	int nerrors;                        /* regions that could not be read (corrupt, foreign) */
	char **errors;                      /* one line each */
	struct vramctl_proc_dev *proc_devs; /* the storage behind procs[].dev */
	struct vramctl_proc_ident *proc_idents; /* the storage behind procs[].ident */
	char *ident_text;                       /* and behind their strings */
};

/* dir NULL: the default registry directory (see vramctl(1)). */
int vramctl_snapshot_take(const char *dir, struct vramctl_snapshot **out);
void vramctl_snapshot_free(struct vramctl_snapshot *s);

#ifdef __cplusplus
}
#endif
#endif /* VRAMCTL_PUBLIC_REGISTRY_H */
