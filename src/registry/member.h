/*
 * member.h - a member's state (struct vr_member: this process's membership
 * of one group) and the inline helpers every writer part shares: the total
 * word, the slot word, the lanes' words, the seqlock. Each part declares
 * its own functions in its own header; src/registry/LAYERS orders them.
 * The parts (src/registry/LAYERS gives their order):
 *
 *   join.c     joining and leaving a group
 *   reader.c   the read-only snapshot for monitors
 *   segcopy.c  a reader's copy of one segment, under its seqlock
 *   lanes.c    threads' spare bytes, in front of the books
 *   spill.c    the group's host budget past the caps
 *   books.c    the books every allocation goes through: devices, reserve,
 *              release, usage
 *   sample.c   numbers shown apart (pinned, denials) and diagnostics
 *   reclaim.c  finding dead members and giving their slots back
 *   damage.c   the audit of the books, and detaching a member from them
 *   held.c     dead members whose memory NVML still lists
 *   lock.c     the group's lock, freezing the books, the seqlock's recovery
 *   serve.c    the member's thread that answers on the group's socket
 *   segment.c  the books in memory: create, prefault, unmap
 *   memfd.c    the sealed memfd: make, map checked, through /proc/PID/fd
 *   handover.c the group's socket: make it, ask it, answer on it
 *   door.c     the door file: its one check, create, publish, its lock
 *   alive.c    members' liveness bytes in the door
 *   dir.c      the registry directory
 *   proc.c     the one /proc layer (and /proc/locks' table of held locks)
 *   knobs.c    the lock's bound and test-only knobs from the environment
 *   util.c     small libc-only helpers
 */
#ifndef VRAMCTL_REGISTRY_MEMBER_H
#define VRAMCTL_REGISTRY_MEMBER_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "registry/knobs.h"
#include "registry/layout.h"
#include "registry/registry.h"

/* What a member joined under, kept in its own memory: the books in the
 * segment are checked against it, and it is what the member falls back to
 * when they cannot be trusted (books.c). Indexed like the group's devices. */
struct vr_priv_dev {
	unsigned char uuid[VR_UUID_LEN];
	/* The cap in force: as joined, then as learned from the books when
	 * `vramctl limit` changed it (under the lock; read by every thread). */
	_Atomic uint64_t cap;
	uint64_t key;          /* vr_tot_key(uuid): the total word's check */
	_Atomic uint64_t mine; /* what this process holds on the device */
	uint64_t quantum;      /* a lane's spare on it (lanes.c), 0: no lanes */
	uint64_t reach;        /* the largest block a lane serves on it */
	uint64_t overhead;     /* charged for this process's overhead (vr_overhead_set) */
	int known;
};

struct vr_member {
	struct vr_hdr *hdr; /* the segment, attached read-write */
	struct vr_slot *slot;
	int fd;       /* the door: liveness locks */
	void *pin;    /* an untouched mapping of the door: keeps fd's locks */
	dev_t st_dev; /* the door file, to know our fd is still ours */
	ino_t st_ino;
	/* The books' memfd (memfd.c): our descriptor of it, kept open for
	 * joiners to open through /proc, and its file, to know the descriptor
	 * is still ours. */
	int books_fd;
	dev_t books_dev;
	ino_t books_ino;
	int door_held;          /* the door's lock, held until our slot says where books_fd is */
	struct vr_serve *serve; /* our thread answering on the group's socket (serve.c) */
	uint32_t slot_idx;
	uint32_t lock_id;
	uint64_t incarnation;
	_Atomic uint64_t max_wait_ns;
	/* Damage: once set, this member keeps its own books (books.c). */
	_Atomic int detached;
	char why[320];
	void (*notice)(const char *line);
	struct vr_priv_dev priv[VR_MAX_DEVICES];
	/* Lanes (lanes.c): nonzero for the one member of the process whose
	 * threads keep spare bytes; which of the slot's lanes are taken. */
	uint64_t lane_gen;
	_Atomic uint32_t lanes_taken;
	int waits;                     /* vr_join_opts.waits: refusals not counted here */
	uint64_t spill_budget;         /* the group's, as joined (spill) */
	_Atomic uint64_t spilled_mine; /* what this process holds against it */
	/* Dead members still on the GPU, as this process saw them (held.c). */
	_Atomic uint64_t held_since[VR_SLOTS];
	_Atomic uint64_t held_asked[VR_SLOTS];
};

/* 1 once the member keeps its own books (damage.c, vr_detach; books.c). */
static inline int vr_is_detached(vr_member *m)
{
	return atomic_load_explicit(&m->detached, memory_order_acquire) != 0;
}

/*
 * The total word of a device (struct vr_hdr_dev.total): the group's
 * bytes in bits 0-47, a 15-bit check of them keyed by the device's UUID in
 * bits 48-62, and VR_TOT_FROZEN while a lock holder has frozen the books (no
 * member changes a frozen total; see lock.c, vr_reg_freeze). Members change
 * it by compare-and-swap with the key of the UUID they joined under, so a
 * total written by anything else (zeroed, random) fails its check. The cap
 * is not in the total's key: `vramctl limit` changes a running group's cap
 * (caps.c) without touching the total. The device's check word is keyed by
 * the cap and the UUID: a write of the cap alone is damage; a cap written
 * with its check (caps.c, under the lock) is learned by every member at its
 * next operation (books.c). 48 bits hold 256 TiB.
 */
#define VR_TOT_MAX    ((1ull << 48) - 1)
#define VR_TOT_FROZEN (1ull << 63)

static inline uint64_t vr_dev_key_of(uint64_t cap, const unsigned char *uuid)
{
	uint64_t u0, u1;
	memcpy(&u0, uuid, 8);
	memcpy(&u1, uuid + 8, 8);
	return (cap * 0x9e3779b97f4a7c15ull) ^ (u0 * 0xbf58476d1ce4e5b9ull) ^
	       (u1 * 0x94d049bb133111ebull);
}
/* The key of a device's total word: its UUID's alone. */
static inline uint64_t vr_tot_key(const unsigned char *uuid)
{
	return vr_dev_key_of(0x7fa3c1d5e9b24681ull, uuid);
}
static inline uint64_t vr_dev_key(const struct vr_hdr_dev *g)
{
	return vr_tot_key(g->uuid);
}
/* The device's check word for its cap and UUID. */
static inline uint64_t vr_dev_check_of(uint64_t cap, const unsigned char *uuid)
{
	return ~vr_dev_key_of(cap, uuid);
}
/* The total word for bytes v (v <= VR_TOT_MAX), not frozen. */
static inline uint64_t vr_tot_make(uint64_t key, uint64_t v)
{
	uint64_t c = (((v ^ key) * 0xd6e8feb86659fd93ull) >> 49) ^ 0x2d5a;
	return v | (c << 48);
}
static inline uint64_t vr_tot_bytes(uint64_t w)
{
	return w & VR_TOT_MAX;
}
static inline int vr_tot_ok(uint64_t key, uint64_t w)
{
	return (w & ~VR_TOT_FROZEN) == vr_tot_make(key, vr_tot_bytes(w));
}
static inline uint64_t vr_dev_total_word(const struct vr_hdr_dev *g)
{
	return atomic_load_explicit((_Atomic uint64_t *)&g->total, memory_order_acquire);
}
/* The device's total in bytes (whatever its check says). */
static inline uint64_t vr_dev_total(const struct vr_hdr_dev *g)
{
	return vr_tot_bytes(vr_dev_total_word(g));
}
/* The device's cap as stored (caps.c changes it under the lock). */
static inline uint64_t vr_dev_cap(const struct vr_hdr_dev *g)
{
	return atomic_load_explicit((_Atomic uint64_t *)&g->cap, memory_order_acquire);
}
/* 1 if the device's cap, UUID and total are as members write them. */
static inline int vr_dev_ok(const struct vr_hdr_dev *g)
{
	return atomic_load_explicit((_Atomic uint64_t *)&g->check, memory_order_acquire) ==
	           vr_dev_check_of(vr_dev_cap(g), g->uuid) &&
	       vr_tot_ok(vr_dev_key(g), vr_dev_total_word(g));
}
/* Sets a device's total (not frozen) and its check word. Lock held, books
 * frozen or not yet shown to anyone. */
static inline void vr_dev_set_total(struct vr_hdr_dev *g, uint64_t v)
{
	g->check = vr_dev_check_of(g->cap, g->uuid);
	atomic_store_explicit((_Atomic uint64_t *)&g->total, vr_tot_make(vr_dev_key(g), v),
	                      memory_order_release);
}

/* Raises a peak to v if it is lower (members do it without the lock). */
static inline void vr_peak_raise(uint64_t *field, uint64_t v)
{
	_Atomic uint64_t *a = (_Atomic uint64_t *)field;
	uint64_t o = atomic_load_explicit(a, memory_order_relaxed);
	while (VR_UNLIKELY(o < v) && !atomic_compare_exchange_weak_explicit(
	                                 a, &o, v, memory_order_relaxed, memory_order_relaxed))
		;
}

/* vr_peak_raise for a reserve: a raise is noted (registry.h,
 * vr_peak_note_start, vr_unpeak). */
static inline void vr_peak_raise_noted(uint64_t *field, uint64_t v)
{
	_Atomic uint64_t *a = (_Atomic uint64_t *)field;
	uint64_t o = atomic_load_explicit(a, memory_order_relaxed);
	while (VR_UNLIKELY(o < v)) {
		if (atomic_compare_exchange_weak_explicit(a, &o, v, memory_order_relaxed,
		                                          memory_order_relaxed)) {
			struct vr_peak_note *n = &vr__peak_note;
			if (n->n < VR_PEAK_NOTES) {
				n->field[n->n] = field;
				n->was[n->n] = o;
				n->now[n->n] = v;
				n->n++;
			}
			return;
		}
	}
}

/* A peak raised by vr_peak_raise outside the group's lock, read whole. */
static inline uint64_t vr_peak_read(const uint64_t *field)
{
	return atomic_load_explicit((const _Atomic uint64_t *)field, memory_order_relaxed);
}

/*
 * The slot word of a device (vr_counts_at(h, i, d)->in_use): the bytes the
 * member holds << VR_W_SHIFT, plus the number of its operations on the
 * device in flight (threads between their first and last write). Changed
 * only by the member, with atomic read-modify-writes.
 */
#define VR_W_SHIFT 16
#define VR_W_ONE   (1ull << VR_W_SHIFT)
#define VR_W_BUSY  (VR_W_ONE - 1)
static inline _Atomic uint64_t *vr_slot_word(struct vr_hdr *h, uint32_t i, uint32_t d)
{
	return (_Atomic uint64_t *)&vr_counts_at(h, i, d)->in_use;
}
static inline uint64_t vr_w_bytes(uint64_t w)
{
	return w >> VR_W_SHIFT;
}
static inline uint64_t vr_slot_held(struct vr_hdr *h, uint32_t i, uint32_t d)
{
	return vr_w_bytes(atomic_load_explicit(vr_slot_word(h, i, d), memory_order_relaxed));
}

/*
 * Lanes (lanes.c): a thread's spare bytes, counted in its member's slot
 * word and the group's total, not yet handed out. The word of a lane:
 * bytes in bits 0-47, device + 1 in bits 48-63.
 */
#define VR_LANE_DEV_SHIFT 48
static inline uint64_t vr_lane_word(const struct vr_slot *s, uint32_t i)
{
	return atomic_load_explicit((_Atomic uint64_t *)&s->lanes[i].word, memory_order_relaxed);
}
/* The bytes a lane word holds spare on device d (0: another device). */
static inline uint64_t vr_lane_spare_on(uint64_t w, uint32_t d)
{
	return w >> VR_LANE_DEV_SHIFT == (uint64_t)d + 1 ? w & VR_TOT_MAX : 0;
}
/* The bytes slot s's lanes hold spare on device d, never more than held. */
static inline uint64_t vr_lanes_spare(const struct vr_slot *s, uint32_t d, uint64_t held)
{
	uint64_t spare = 0;
	for (uint32_t i = 0; i < VR_LANES; i++)
		spare += vr_lane_spare_on(vr_lane_word(s, i), d);
	return spare < held ? spare : held;
}
/* What slot i's member has handed out on device d: held less spare. */
static inline uint64_t vr_slot_used(struct vr_hdr *h, uint32_t i, uint32_t d)
{
	uint64_t held = vr_slot_held(h, i, d);
	return held - vr_lanes_spare(vr_slot_at(h, i), d, held);
}
/* The spare a lane refills to and keeps on a device of cap bytes (its
 * quantum): a 65,536th of the cap, at most 1 MiB; none below 4 KiB (caps
 * under 256 MiB have no lanes: their books stay exact). */
static inline uint64_t vr_lane_quantum(uint64_t cap)
{
	if (vr_test_lane_quantum)
		return vr_test_lane_quantum;
	uint64_t q = cap >> 16;
	return q > (1u << 20) ? (1u << 20) : q < 4096 ? 0 : q;
}

/* The largest block a lane serves on a device of cap bytes (its reach), so
 * that the card's 2 MiB pages and their small multiples, the blocks real
 * programs take, cost what small ones do: a 1,024th of the cap in whole
 * 2 MiB pages, at most VR_LANE_REACH_MAX (2 MiB from 2 GiB caps, 8 MiB from
 * 8 GiB, 32 MiB from 32 GiB), never less than the quantum; the quantum
 * itself where there are no lanes or VRAMCTL_TEST_LANE_QUANTUM sets it
 * (VRAMCTL_TEST_LANE_REACH sets it for the tests). A lane keeps at most
 * its reach plus its quantum spare (lanes.c). */
#define VR_LANE_PAGE      (2ull << 20)
#define VR_LANE_REACH_MAX (32ull << 20)
static inline uint64_t vr_lane_reach(uint64_t cap)
{
	uint64_t q = vr_lane_quantum(cap);
	if (!q)
		return 0;
	if (vr_test_lane_reach)
		return vr_test_lane_reach > q ? vr_test_lane_reach : q;
	if (vr_test_lane_quantum)
		return q;
	uint64_t r = (cap >> 10) & ~(VR_LANE_PAGE - 1);
	r = r > VR_LANE_REACH_MAX ? VR_LANE_REACH_MAX : r;
	return r > q ? r : q;
}

/* Fields that vr_reclaim_dead reads without the lock (slots_hw, a slot's
 * state and incarnation) are written with atomic stores, under the lock. */
#define STORE32(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_release)
#define STORE64(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)

/* Clears a slot's numbers on one device (lock held; readers copy them),
 * c as vr_counts_at gives it: its line's parked bytes too. */
static inline void vr_counts_clear(struct vramctl_counts *c)
{
	STORE64(&((struct vr_counts_line *)(void *)c)->parked, 0);
	STORE64(&c->in_use, 0);
	STORE64(&c->peak, 0);
	STORE64(&c->denied_count, 0);
	STORE64(&c->last_denied, 0);
	STORE64(&c->spilled, 0);
	STORE64(&c->overhead, 0);
}

/* Room was made in the books: when some member waits for room, the
 * header's wake word moves and every sleeper wakes (lock.c); one load
 * otherwise. The load is sequentially consistent (a plain load on x86),
 * after the caller's own change to a total: a waiter that counted itself
 * in before it read the books either sees the room or is woken. */
void vr__wake_waiters(struct vr_hdr *h);
static inline void vr_wake_waiters(struct vr_hdr *h)
{
	if (VR_UNLIKELY(atomic_load((_Atomic uint32_t *)&h->wait.waiters) != 0))
		vr__wake_waiters(h);
}

/* *v -= b, never below 0. */
static inline void vr_sub_clamped(uint64_t *v, uint64_t b)
{
	*v -= b < *v ? b : *v;
}

/* ---- seqlock: readers without the lock see whether they raced a writer */

static inline void vr_seq_begin(struct vr_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_relaxed);
	/* Later stores must not pass this one. x86 never reorders stores, so a
	 * compiler barrier is enough there (and TSan rejects thread fences). */
#if defined(__x86_64__) || defined(__i386__)
	atomic_signal_fence(memory_order_seq_cst);
#else
	atomic_thread_fence(memory_order_release);
#endif
	/* Test-only: stop here, lock held and the books open (seq odd). */
	vr_test_stop_point();
}

static inline void vr_seq_end(struct vr_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_release);
}

#endif /* VRAMCTL_REGISTRY_MEMBER_H */
