/*
 * layout.h - the layout of one group's books (the words: registry.h).
 *
 * Three pieces per group, in the registry directory and in memory:
 *   the door, <dir>/<group>.vrg: a 4 KiB file holding the header's identity
 *     (magic, version, group, spec) and the key of the books below.
 *     Members hold their liveness locks on its bytes (slot offsets, past its
 *     end). It is only ever read and written with pread/pwrite, never mapped.
 *   the socket, <dir>/.<group>.vrg.sock (handover.h): every live member
 *     answers on it with the books, a read-only descriptor of the door and
 *     the listening socket itself (SCM_RIGHTS), so a process in any
 *     namespace that reaches the directory joins the same books.
 *   the books (the "segment"): a sealed memfd of VR_SEGMENT_SIZE bytes, a
 *     4 KiB header (identity, the lock word, the seqlock counter, the
 *     per-device books), then VR_SLOTS slots, one per member process
 *     (who it is, its threads' lanes), then the members' numbers, device by
 *     device: for each device, one cache line per slot (its slot word, its
 *     peak, its refusals, its spilled bytes). So whoever reads every
 *     member's numbers on one device (an audit, a freeze, a reader) reads
 *     VR_SLOTS lines in a row, a page per 64 members, not a page per
 *     member; and no two members' hot words share a cache line. Members
 *     map it read-write, monitors read-only. Sealed against shrinking and
 *     growing, it cannot be truncated under its mappers (a mapped file can
 *     be: SIGBUS); it goes with the last process that holds or maps it.
 *
 * Invariant (docs/architecture.md, "The lock-free books"): for every
 * device d, with held(i) the bytes in slot i's word on d (vr_counts_at)
 * and busy(i) its count of operations in flight,
 *   total(d) >= sum of held(i) over USED slots (dead ones included), and
 *   total(d) == that sum whenever no USED slot is busy on d.
 * Members change total(d) by compare-and-swap without the lock; the lock
 * is for joins, leaves, reclaims and recovery, which freeze the totals and
 * wait for the busy counts to drain before they recompute anything.
 * And, whenever the lock is free, hdr->spilled == sum of
 * counts(i, d).spilled over USED slots and all d (spill changes them
 * under the lock). And a slot's numbers are 0 on every device the group
 * does not have (a slot's numbers on the group's devices are zeroed when it
 * is taken, every slot's when the group starts afresh; a device is added
 * only over zeros; nothing reads a free slot's). Anything else that
 * breaks these is damage ("Failure model").
 *
 * Any change here changes VR_LAYOUT_VERSION and the pinned numbers in
 * tests/registry/test_layout.c.
 */
#ifndef VRAMCTL_REGISTRY_LAYOUT_H
#define VRAMCTL_REGISTRY_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "common/contract.h"
#include "registry/registry.h"
#include "vramctl/registry.h"

#define VR_LAYOUT_MAGIC   0x3147524c54434d56ULL /* "VMCTLRG1" read little-endian */
#define VR_LAYOUT_VERSION 11u
#define VR_SLOTS          1024u
#define VR_HDR_SIZE       4096u
/* The header's group field. Part of the pinned layout: 72 bytes, more than
 * a name needs (VR_GROUP_NAME_MAX + 1, common/contract.h), so that the
 * fields after it stay 8-byte aligned. */
#define VR_GROUP_FIELD 72
#define VR_SPEC_MAX    128 /* limit spec text, with the NUL */
#define VR_COMMAND_MAX 128
#define VR_LANES       8 /* per member: threads with their own spare (lanes.c) */

enum { VR_SLOT_FREE = 0, VR_SLOT_USED = 1 };
/* struct vr_slot.flags: a launcher (`vramctl run`) holds the group open for
 * its command and runs no GPU code: not counted among the members. */
enum { VR_SLOT_F_LAUNCHER = 1u << 0 };
/* VR_SLOT_F_ALLOCATIONS and VR_SLOT_F_NO_FIGURES: registry.h. */

/*
 * A ghost: a member of the group's books before these, dead, whose
 * memory the driver may still hold while it tears its contexts down. The
 * books go with their last member (segment.c) and a joiner then starts the
 * group afresh; it finds who was a member in the door (vr_member_ref,
 * below) and keeps up to VR_GHOSTS of them here, so that every member's
 * check of the card counts what NVML still lists for them, for
 * VR_HELD_BOUND_MS (held.c) after the group started. Written once, under
 * the lock, when the group starts; host_pid 0 ends the list.
 */
#define VR_GHOSTS 16
struct vr_ghost {
	int32_t host_pid; /* as NVML lists it: the first NSpid entry */
	uint32_t pad;
	uint64_t start_time; /* /proc/PID/stat field 22 */
};

/*
 * Waiting for room and parking (wait.c, park.c). A member that waits
 * for room on a device says so in its slot (struct vr_slot_wait) and
 * sleeps on `wake` (a futex on the shared segment); whoever makes room
 * (a release into the books, a reclaim, a park, a cap raised) bumps
 * `wake` and wakes the sleepers when `waiters` is not 0, so a group where
 * nobody waits pays one load per release into the books. `tickets` gives
 * each wait its place in the group's order (the oldest live waiter on a
 * device is served first). A parked member's bytes are out of the totals
 * and held on the host against `park_budget`, `parked` their sum.
 */
struct vr_hdr_wait {
	uint32_t wake;        /* futex word: bumped when room is made while someone waits */
	uint32_t waiters;     /* members waiting for room now (every device) */
	uint64_t tickets;     /* the next wait's place in the order */
	uint64_t park_budget; /* host bytes the group may park (0: no parking) */
	uint64_t parked;      /* sum of the USED slots' parked bytes, held against it */
};

/* A member waiting for room on one device, or parked: written by the
 * member alone, read by the group's other waiters and by monitors. */
enum { VR_PARK_NONE = 0, VR_PARK_PARKED = 1 };
struct vr_slot_wait {
	uint32_t dev;          /* device + 1 it waits for room on, 0: not waiting */
	uint32_t park;         /* VR_PARK_* */
	uint64_t bytes;        /* what the wait asks for */
	uint64_t claimed;      /* of it, set aside already: in the slot word and the total */
	uint64_t since;        /* CLOCK_REALTIME ns the wait began */
	uint64_t ticket;       /* its place in the group's order (vr_hdr_wait.tickets) */
	uint64_t parked_since; /* CLOCK_REALTIME ns it was parked, while parked */
	uint64_t idle_since;   /* CLOCK_REALTIME ns of its last driver call seen (parkable
	                          members with --park-idle; 0: unknown) */
	uint32_t flags;        /* VR_PARK_F_* */
	uint32_t pad;
};
/* It can be parked (--park-idle): its library gates its driver calls. */
enum { VR_PARK_F_PARKABLE = 1u << 0 };

/* A group's books for one device. */
struct vr_hdr_dev {
	unsigned char uuid[VR_UUID_LEN];
	uint64_t cap; /* UINT64_MAX: uncapped */
	/* The group's total, changed by compare-and-swap (member.h, "The
	 * total word"): bytes in bits 0-47, a 15-bit check of them in 48-62,
	 * bit 63 set while a lock holder has frozen the books. */
	uint64_t total;
	uint64_t peak;
	uint64_t check; /* ~key of cap and UUID: a write of either alone is damage */
};

struct vr_hdr {
	uint64_t magic; /* written last at creation: a file is complete once it has it */
	uint32_t version;
	uint32_t hdr_size;
	uint64_t total_size;
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t owner_uid;
	uint32_t ndev;              /* devices [0, ndev) are valid */
	uint64_t seq;               /* seqlock: odd while a writer is changing the books */
	uint64_t created;           /* CLOCK_REALTIME seconds of creation or last reset */
	uint32_t growth;            /* the creator's --growth */
	uint32_t slot_hint;         /* where the next joiner starts looking (advisory) */
	uint32_t slots_hw;          /* slots [slots_hw, slot_count) have never been used */
	uint32_t slot_next;         /* the next never-used slot to hand a joiner (advisory) */
	char group[VR_GROUP_FIELD]; /* NUL-terminated */
	char limit_spec[VR_SPEC_MAX];
	union {
		uint32_t word; /* 0 free, else the holder (lock.c) */
		unsigned char bytes[64];
	} lock;
	uint64_t epoch;   /* incremented at each reset */
	uint64_t shm_key; /* random; the door and its segment carry the same */
	int32_t shm_id;   /* in the door: VR_SHM_ID_MEMFD once it has books, else -1 */
	uint32_t pad1a;
	uint64_t spill_budget; /* host bytes the whole group may spill (0: no spill) */
	uint64_t spilled;      /* sum of the USED slots' dev[].spilled, held against it */
	/* Refusals counted by every member on every device since the group
	 * started (under the lock, as each slot's denied_count): a count that
	 * outlives the members. A pad word before: members of a layout
	 * that did not write it leave it 0, so no version change. */
	uint64_t denials;
	struct vr_hdr_dev dev[VR_MAX_DEVICES];
	/* In the books: members of the books before these that may still be
	 * on the card (vr_ghost, below); zero in a door, and where none. */
	struct vr_ghost ghosts[VR_GHOSTS];
	struct vr_hdr_wait wait; /* waiting for room and parking */
	unsigned char pad2[VR_HDR_SIZE - 384 - VR_MAX_DEVICES * sizeof(struct vr_hdr_dev) -
	                   VR_GHOSTS * sizeof(struct vr_ghost) - sizeof(struct vr_hdr_wait)];
};

/* A thread's lane (lanes.c): the bytes it holds spare, reserved in the
 * books but not handed out, in bits 0-47, and its device + 1 in bits 48-63
 * (0: none). Written by its thread alone; a cache line of its own. */
struct vr_lane {
	uint64_t word;
	uint64_t pad[7];
};

struct vr_slot {
	uint32_t state;       /* VR_SLOT_FREE / VR_SLOT_USED, written last when taken */
	int32_t pid;          /* getpid() of the member: its own namespace's view */
	uint64_t incarnation; /* bumped at every take, leave and reclaim */
	uint64_t start_time;  /* /proc/self/stat field 22 */
	int32_t nspid_outer;  /* first NSpid entry of /proc/self/status, 0 unknown */
	uint32_t uid;
	uint64_t host_pinned;
	uint64_t joined; /* CLOCK_REALTIME seconds */
	char command[VR_COMMAND_MAX];
	uint32_t growth;
	uint32_t flags;           /* VR_SLOT_F_* */
	uint64_t ipc_ns;          /* the member's IPC namespace (its inode), 0: unknown */
	struct vr_slot_wait wait; /* waiting and parking */
	struct vr_lane lanes[VR_LANES];
};

/* A member's numbers on one device: vramctl/registry.h's counts, but in_use
 * holds the slot word (held bytes << 16 | operations in flight: member.h,
 * "The slot word"), and overhead is the part of the held bytes charged for
 * the member's overhead on the card (written by the member alone). A cache
 * line of its own. phantom: operations in flight that a lock holder found
 * to stay while the member ran, i.e. damage (lock.c, "Phantom operations"):
 * the slot's incarnation << 16 | the count it saw, 0 none. parked, while
 * the member is parked, the bytes it held on the device, now on the host
 * and out of the slot word (park.c). */
struct vr_counts_line {
	struct vramctl_counts c;
	uint64_t phantom;
	uint64_t parked;
};

_Static_assert(VR_GROUP_FIELD >= VR_GROUP_NAME_MAX + 1, "the header holds any valid group name");

/* The group's last VR_CHANGES cap changes (caps.c, `vramctl limit`), after
 * the members' numbers: change k (from 0, since the group started) is in
 * c[k % VR_CHANGES]. Written under the lock and the seqlock. The count and
 * each change carry a check word (vr_changes_count_check, vr_change_check:
 * change k's is keyed by k), so a ring overwritten by anything else reads
 * as damaged, never as changes (all zeros, a group that never changed its
 * caps, passes). */
#define VR_CHANGES 16
struct vr_change {
	uint64_t when; /* CLOCK_REALTIME seconds */
	uint32_t uid;  /* who made it: its real UID, as its parent user namespace sees it */
	int32_t pid;   /* that process, in its own namespace */
	unsigned char uuid[VR_UUID_LEN];
	uint64_t old_cap, new_cap;
	uint64_t check; /* vr_change_check(this, k) */
};
struct vr_changes {
	uint64_t count;       /* changes made since the group started */
	uint64_t count_check; /* vr_changes_count_check(count) */
	uint64_t pad[6];
	struct vr_change c[VR_CHANGES];
};

static inline uint64_t vr_change_mix(uint64_t h, uint64_t v)
{
	h ^= v * 0x9e3779b97f4a7c15ull;
	h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}
/* 0 for 0: a ring never written (zeros) is whole. */
static inline uint64_t vr_changes_count_check(uint64_t count)
{
	return vr_change_mix(0, count);
}
static inline uint64_t vr_change_check(const struct vr_change *c, uint64_t k)
{
	uint64_t u0, u1;
	memcpy(&u0, c->uuid, 8);
	memcpy(&u1, c->uuid + 8, 8);
	uint64_t h = vr_change_mix(0x6368616e67652121ull, k);
	h = vr_change_mix(h, c->when);
	h = vr_change_mix(h, (uint64_t)c->uid | (uint64_t)(uint32_t)c->pid << 32);
	h = vr_change_mix(h, u0);
	h = vr_change_mix(h, u1);
	h = vr_change_mix(h, c->old_cap);
	return vr_change_mix(h, c->new_cap);
}
/* 1 when ch's count and every change it keeps pass their checks. */
static inline int vr_changes_whole(const struct vr_changes *ch)
{
	if (ch->count_check != vr_changes_count_check(ch->count))
		return 0;
	uint64_t first = ch->count > VR_CHANGES ? ch->count - VR_CHANGES : 0;
	for (uint64_t k = first; k < ch->count; k++)
		if (ch->c[k % VR_CHANGES].check != vr_change_check(&ch->c[k % VR_CHANGES], k))
			return 0;
	return 1;
}

/*
 * Who each member is, beyond its slot (ident.c): what it read at its join
 * of its cgroups (/proc/self/cgroup, the kernel's text, in its own cgroup
 * namespace) and of its environment (the names a pod spec gives it). A
 * monitor reads it instead of opening /proc/PID/cgroup and environ for
 * every member at every look: it checks the cgroups against the kernel's
 * cgroup.procs, a read per cgroup, not per process (monitor/identity.c).
 * Written once, at the join, under the lock, after the slot's fields and
 * before its state; a reader takes a record only when its pid and start
 * time are its slot's and its check word matches (a slot's next member
 * writes over it). Read by nobody else, so it sits after everything else:
 * a member never touches another's.
 */
#define VR_IDENT_CGROUP 448 /* /proc/self/cgroup's text, with its NUL ("" when longer) */
#define VR_IDENT_POD    254 /* VRAMCTL_POD_NAME: a DNS subdomain, 253, and the NUL */
#define VR_IDENT_LABEL  64  /* VRAMCTL_POD_NAMESPACE, VRAMCTL_CONTAINER_NAME: 63 and the NUL */
struct vr_ident {
	int32_t pid; /* its slot's member: getpid() */
	uint32_t pad0;
	uint64_t start_time; /* and its start time */
	uint64_t cgns;       /* the inode of its cgroup namespace (0: unknown) */
	uint64_t check;      /* sequence word: odd while written, 0 never written (ident.c) */
	char cgroup[VR_IDENT_CGROUP];
	char pod_name[VR_IDENT_POD];
	char pod_namespace[VR_IDENT_LABEL];
	char container_name[VR_IDENT_LABEL];
	unsigned char pad[34];
};

#define VR_SLOTS_OFFSET  ((uint64_t)VR_HDR_SIZE)
#define VR_COUNTS_OFFSET (VR_SLOTS_OFFSET + (uint64_t)VR_SLOTS * sizeof(struct vr_slot))
#define VR_CHANGES_OFFSET                                                                          \
	(VR_COUNTS_OFFSET + (uint64_t)VR_MAX_DEVICES * VR_SLOTS * sizeof(struct vr_counts_line))
#define VR_IDENT_OFFSET (VR_CHANGES_OFFSET + sizeof(struct vr_changes))
#define VR_SEGMENT_SIZE (VR_IDENT_OFFSET + (uint64_t)VR_SLOTS * sizeof(struct vr_ident))
#define VR_DOOR_SIZE    VR_HDR_SIZE

static inline struct vr_ident *vr_ident_at(struct vr_hdr *h, uint32_t i)
{
	return (struct vr_ident *)(void *)((unsigned char *)h + VR_IDENT_OFFSET) + i;
}

static inline struct vr_slot *vr_slot_at(struct vr_hdr *h, uint32_t i)
{
	return (struct vr_slot *)(void *)((unsigned char *)h + VR_SLOTS_OFFSET) + i;
}

/* The first change kept from change `from` on, of `count` made (older ones
 * were written over): the ring's readers start there. */
static inline uint64_t vr_changes_first(uint64_t count, uint64_t from)
{
	return count > VR_CHANGES && from < count - VR_CHANGES ? count - VR_CHANGES : from;
}

static inline struct vr_changes *vr_changes_at(struct vr_hdr *h)
{
	return (struct vr_changes *)(void *)((unsigned char *)h + VR_CHANGES_OFFSET);
}

/* Slot i's numbers on device d. */
static inline struct vramctl_counts *vr_counts_at(struct vr_hdr *h, uint32_t i, uint32_t d)
{
	struct vr_counts_line *l =
	    (struct vr_counts_line *)(void *)((unsigned char *)h + VR_COUNTS_OFFSET);
	return &l[(size_t)d * VR_SLOTS + i].c;
}

/* Slot i's phantom mark on device d (struct vr_counts_line, lock.c). */
static inline _Atomic uint64_t *vr_phantom_at(struct vr_hdr *h, uint32_t i, uint32_t d)
{
	struct vr_counts_line *l =
	    (struct vr_counts_line *)(void *)((unsigned char *)h + VR_COUNTS_OFFSET);
	return (_Atomic uint64_t *)&l[(size_t)d * VR_SLOTS + i].phantom;
}

/* Byte ranges locked by a member for its life: the OFD lock (liveness) and
 * the classic POSIX lock (lets a reader learn the holder's PID in its own
 * namespace). Distinct bytes, since the two kinds conflict with each other.
 * Their places in the door never change with the layout (3,264 was the
 * slot's size up to version 5): a joiner of any version sees every live
 * member of any other in its probes, so it never makes a second segment
 * for a group whose members it cannot read. */
#define VR_LIVE_STRIDE 3264
static inline long long vr_slot_live_byte(uint32_t i)
{
	return (long long)VR_HDR_SIZE + (long long)i * VR_LIVE_STRIDE;
}
static inline long long vr_slot_pid_byte(uint32_t i)
{
	return vr_slot_live_byte(i) + 1;
}

/*
 * Where a member keeps its descriptor of the books (memfd.c), the second
 * way to them after the socket: the door's shm_id is VR_SHM_ID_MEMFD, and
 * each member says where its descriptor is, at vr_slot_books_byte(i) of its
 * slot (past the door's 4 KiB, among its slot's lock bytes, which are never
 * read or written): a joiner in its PID namespace opens /proc/PID/fd/FD of
 * a live member. Written with one pwrite, read with one pread; a stale or
 * torn one fails the joiner's checks.
 */
/*
 * Who was a member: each member writes its record at vr_slot_member_byte(i)
 * of its slot in the door (beside its books reference, among its lock
 * bytes) once it is in, with one pwrite; the door outlives the books, so a
 * joiner that starts the group afresh learns its dead members there
 * (struct vr_ghost above). A torn or stale record names a process that is
 * alive or gone from NVML's list, and counts nothing.
 */
#define VR_MEMBER_REF_TAG 0x4d454d42u /* "BMEM" read little-endian */
struct vr_member_ref {
	uint32_t tag;     /* VR_MEMBER_REF_TAG */
	int32_t host_pid; /* the first NSpid entry (0: not known) */
	uint64_t start_time;
	uint64_t key; /* the shm_key of the books it joined */
};
static inline long long vr_slot_member_byte(uint32_t i)
{
	return vr_slot_live_byte(i) + 64;
}

#define VR_SHM_ID_MEMFD  (-2)
#define VR_BOOKS_REF_TAG 0x4446454du /* "MEFD" read little-endian */
struct vr_books_ref {
	uint32_t tag; /* VR_BOOKS_REF_TAG */
	int32_t pid;  /* getpid() of the member: its own namespace's view */
	int32_t fd;   /* its descriptor of the memfd */
	uint32_t pad;
	uint64_t key; /* the books' shm_key */
};
static inline long long vr_slot_books_byte(uint32_t i)
{
	return vr_slot_live_byte(i) + 8;
}

/* The lock word (lock.c). */
#define VR_LOCK_SLOT_BITS  11
#define VR_LOCK_SLOT_MASK  ((1u << VR_LOCK_SLOT_BITS) - 1)
#define VR_LOCK_WAITERS    0x80000000u
#define VR_LOCK_TOKEN_MASK (~VR_LOCK_SLOT_MASK & ~VR_LOCK_WAITERS)

/* Counts read from the segment, clamped to what the layout holds. */
static inline uint32_t vr_hdr_ndev(const struct vr_hdr *h)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->ndev, memory_order_relaxed);
	return n < VR_MAX_DEVICES ? n : VR_MAX_DEVICES;
}
static inline uint32_t vr_hdr_hw(const struct vr_hdr *h)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->slots_hw, memory_order_acquire);
	return n < VR_SLOTS ? n : VR_SLOTS;
}

#endif /* VRAMCTL_REGISTRY_LAYOUT_H */
