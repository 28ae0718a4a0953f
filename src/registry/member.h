/*
 * member.h - what the registry's writer parts share (internal): a member's
 * state, the seqlock, the lock, liveness and the region files. The parts:
 *
 *   region.c  the registry directory, the region file and its one check
 *   lock.c    the group's lock and the seqlock's recovery
 *   live.c    liveness of members (their slot locks) and reclaiming the dead
 *   join.c    joining and leaving a group
 *   books.c   the books every allocation goes through
 *   reader.c  the read-only snapshot for monitors
 *   proc.c    the one /proc layer
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
#include "registry/region.h"
#include "registry/registry.h"

/* What a member joined under, kept in its own memory: the books in the
 * segment are checked against it, and it is what the member falls back to
 * when they cannot be trusted (books.c). Indexed like the group's devices. */
struct vr_priv_dev {
	unsigned char uuid[VR_UUID_LEN];
	uint64_t cap;
	uint64_t key;          /* vr_dev_key_of(cap, uuid): the total word's check */
	_Atomic uint64_t mine; /* what this process holds on the device */
	uint64_t quantum;      /* a lane's spare on it (lanes.c), 0: no lanes */
	int known;
};

struct vr_member {
	struct vr_region_hdr *hdr; /* the segment, attached read-write */
	struct vr_slot *slot;
	int fd;       /* the door: liveness locks */
	void *pin;    /* an untouched mapping of the door: keeps fd's locks */
	dev_t st_dev; /* the door file, to know our fd is still ours */
	ino_t st_ino;
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
	uint64_t spill_budget;         /* the group's, as joined (spill) */
	_Atomic uint64_t spilled_mine; /* what this process holds against it */
	/* Dead members still on the GPU, as this process saw them (held.c). */
	_Atomic uint64_t held_since[VR_REGION_SLOTS];
	_Atomic uint64_t held_asked[VR_REGION_SLOTS];
};

/* The lock word (lock.c). */
#define VR_LOCK_SLOT_BITS  11
#define VR_LOCK_SLOT_MASK  ((1u << VR_LOCK_SLOT_BITS) - 1)
#define VR_LOCK_WAITERS    0x80000000u
#define VR_LOCK_TOKEN_MASK (~VR_LOCK_SLOT_MASK & ~VR_LOCK_WAITERS)

/* 1 once the member keeps its own books (damage: books.c, vr_detach). */
static inline int vr_is_detached(vr_member *m)
{
	return atomic_load_explicit(&m->detached, memory_order_acquire) != 0;
}

/* Counts read from the segment, clamped to what the layout holds. */
static inline uint32_t vr_hdr_ndev(const struct vr_region_hdr *h)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->ndev, memory_order_relaxed);
	return n < VR_MAX_DEVICES ? n : VR_MAX_DEVICES;
}
static inline uint32_t vr_hdr_hw(const struct vr_region_hdr *h)
{
	uint32_t n = atomic_load_explicit((_Atomic uint32_t *)&h->slots_hw, memory_order_acquire);
	return n < VR_REGION_SLOTS ? n : VR_REGION_SLOTS;
}
/*
 * The total word of a device (struct vr_region_dev.total): the group's
 * bytes in bits 0-47, a 15-bit check of them keyed by the device's cap and
 * UUID in bits 48-62, and VR_TOT_FROZEN while a lock holder has frozen the
 * books (no member changes a frozen total; see lock.c, vr_books_freeze).
 * Members change it by compare-and-swap with the key of the cap and UUID
 * they joined under, so a total written by anything else (zeroed, random)
 * fails its check, and a cap overwritten in the segment does not change
 * what a member checks against. 48 bits hold 256 TiB.
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
static inline uint64_t vr_dev_key(const struct vr_region_dev *g)
{
	return vr_dev_key_of(g->cap, g->uuid);
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
static inline uint64_t vr_dev_total_word(const struct vr_region_dev *g)
{
	return atomic_load_explicit((_Atomic uint64_t *)&g->total, memory_order_acquire);
}
/* The device's total in bytes (whatever its check says). */
static inline uint64_t vr_dev_total(const struct vr_region_dev *g)
{
	return vr_tot_bytes(vr_dev_total_word(g));
}
/* 1 if the device's cap, UUID and total are as members write them. */
static inline int vr_dev_ok(const struct vr_region_dev *g)
{
	uint64_t key = vr_dev_key(g);
	return g->check == ~key && vr_tot_ok(key, vr_dev_total_word(g));
}
/* Sets a device's total (not frozen) and its check word. Lock held, books
 * frozen or not yet shown to anyone. */
static inline void vr_dev_set_total(struct vr_region_dev *g, uint64_t v)
{
	uint64_t key = vr_dev_key(g);
	g->check = ~key;
	atomic_store_explicit((_Atomic uint64_t *)&g->total, vr_tot_make(key, v),
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

/*
 * The slot word of a device (vr_region_counts(h, i, d)->in_use): the bytes the
 * member holds << VR_W_SHIFT, plus the number of its operations on the
 * device in flight (threads between their first and last write). Changed
 * only by the member, with atomic read-modify-writes.
 */
#define VR_W_SHIFT 16
#define VR_W_ONE   (1ull << VR_W_SHIFT)
#define VR_W_BUSY  (VR_W_ONE - 1)
static inline _Atomic uint64_t *vr_slot_word(struct vr_region_hdr *h, uint32_t i, uint32_t d)
{
	return (_Atomic uint64_t *)&vr_region_counts(h, i, d)->in_use;
}
static inline uint64_t vr_w_bytes(uint64_t w)
{
	return w >> VR_W_SHIFT;
}
static inline uint64_t vr_slot_held(struct vr_region_hdr *h, uint32_t i, uint32_t d)
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
static inline uint64_t vr_slot_used(struct vr_region_hdr *h, uint32_t i, uint32_t d)
{
	uint64_t held = vr_slot_held(h, i, d);
	return held - vr_lanes_spare(vr_region_slot(h, i), d, held);
}
/* Test-only: every device's lane quantum (VRAMCTL_TEST_LANE_QUANTUM), 0: by the cap. */
extern uint64_t vr_test_lane_quantum;
/* The spare a lane may keep on a device of cap bytes: a 65,536th of the
 * cap, at most 1 MiB; none below 4 KiB (small caps stay exact). */
static inline uint64_t vr_lane_quantum(uint64_t cap)
{
	if (vr_test_lane_quantum)
		return vr_test_lane_quantum;
	uint64_t q = cap >> 16;
	return q > (1u << 20) ? (1u << 20) : q < 4096 ? 0 : q;
}

/* Fields that reclaim_dead() reads without the mutex (slots_hw, a slot's
 * state and incarnation) are written with atomic stores, under the mutex. */
#define STORE32(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_release)
#define STORE64(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)

/* Clears a slot's numbers on one device (lock held; readers copy them). */
static inline void vr_counts_clear(struct vramctl_counts *c)
{
	STORE64(&c->in_use, 0);
	STORE64(&c->peak, 0);
	STORE64(&c->denied_count, 0);
	STORE64(&c->last_denied, 0);
	STORE64(&c->spilled, 0);
}

uint64_t vr_now_ns(void);

/* *v -= b, never below 0. */
static inline void vr_sub_clamped(uint64_t *v, uint64_t b)
{
	*v -= b < *v ? b : *v;
}

/* ---- lock.c */

/* Test-only: VRAMCTL_TEST_STOP_IN_LOCK=N (read at the first join). */
extern _Atomic long vr_stop_in_lock_countdown;
/* The longest wait for the lock on a live holder (VRAMCTL_TEST_LOCK_BOUND_MS). */
extern uint64_t vr_lock_bound_ns;
void vr_read_test_env(void);
/* A lock id for a member in slot slot_idx (unique per member, in practice). */
uint32_t vr_lock_id(uint32_t slot_idx);
/* 1 if a lock word names a live member: alive[] (one byte per slot, from a
 * reader's lock table) when not NULL, else asked of the kernel through fd. */
int vr_lock_word_alive(int fd, uint32_t word, const unsigned char *alive);

/* Test-only (VRAMCTL_TEST_STOP_IN_LOCK=N): the Nth call stops the process
 * (SIGSTOP). Called inside every locked section that writes the books and
 * inside every lock-free reserve and release, between their writes to the
 * total and to the slot word (books.c): the windows a death must survive. */
static inline void vr_test_stop_point(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_stop_in_lock_countdown, memory_order_relaxed) >
	                0) &&
	    atomic_fetch_sub(&vr_stop_in_lock_countdown, 1) == 1)
		raise(SIGSTOP);
}

/* ---- seqlock: readers without the mutex see whether they raced a writer */

static inline void books_begin(struct vr_region_hdr *h)
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

static inline void books_end(struct vr_region_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_release);
}

/*
 * Freezes every device's total (lock held) and waits until no USED slot
 * has an operation in flight, so the slots and totals hold still: 0, or
 * -ETIMEDOUT when a live member stays in the middle of one past the bound
 * (stopped): the totals are then thawed unchanged. A slot whose owner is
 * dead is not waited for; *dead_busy (when not NULL) is set when one was
 * busy (it died inside an operation: the totals may count it).
 * -EBADMSG: a total's check failed (damage); nothing is left frozen.
 */
int vr_books_freeze(vr_member *m, int *dead_busy);
/* Thaws the totals, each set to the sum of the USED slots (recompute != 0)
 * or left as it was. Lock held, books frozen. Returns 0, or -ETIMEDOUT when
 * a slot did not settle (the totals are then left as they were). */
int vr_books_thaw(vr_member *m, int recompute);
/* Slot i's word for device d once no operation is in flight on it, or as
 * it is when its owner died inside one (*dead_busy set). Lock held, books
 * frozen: an operation that starts now undoes itself at once. 0, or
 * -ETIMEDOUT when a live member stays inside one past the bound. */
int vr_slot_settled(vr_member *m, uint32_t i, uint32_t d, uint64_t *word, int *dead_busy);
/* The sum of the USED slots' settled words, per device. 0 or -ETIMEDOUT. */
int vr_books_sum(vr_member *m, uint64_t sum[VR_MAX_DEVICES], int *dead_busy);

/* Takes the group's lock: 0, or -ETIMEDOUT after vr_lock_bound_ns when a
 * live member keeps it. Takes over a lock held by anything else (a dead
 * member, damage) and recovers what it may have left half done. */
int vr_region_lock(vr_member *m);
void vr_region_unlock(vr_member *m);

/* ---- live.c */

/* 1 if some open file description other than fd's holds slot i's liveness
 * byte, 0 if none does (its owner is gone), negative errno on error. */
int vr_slot_alive(int fd, uint32_t i);
/* 1 once a dead member's process is reaped (its memory may be in the driver
 * until then: live.c). Not exact: a PID that exists counts as not reaped. */
int vr_member_gone(const struct vr_slot *s, int exact);
/* 1 if a USED slot other than self belongs to a process not yet reaped
 * (dead or alive): the group is not empty. Lock held. */
int vr_unreaped_others(struct vr_region_hdr *h, uint32_t self);
/* Returns a dead slot's bytes to the group and frees it. Lock held.
 * Returns 0, or -EBADMSG when the slot holds more than the group's total
 * or a total fails its check: the books are damaged. */
int vr_slot_reclaim_locked(vr_member *m, uint32_t i);
/* 1 if a member other than slot `self` holds any slot's liveness byte. */
int vr_others_alive(int fd, uint32_t self);

/* ---- held.c */

/* 1 if slot i (USED, its owner dead and reaped, incarnation inc) must stay
 * held because NVML still lists its process on a device where it holds
 * bytes, within the bound; 0 when it may be reclaimed (no probe, nothing
 * held, NVML cannot tell, or the bound has passed). May ask NVML: never
 * call it with the group's lock held. */
int vr_dead_on_gpu(vr_member *m, uint32_t i, const struct vr_slot *s, uint64_t inc);

/* ---- books.c */

/* Marks the member's books damaged (once): it says why through its notice
 * callback and keeps its own books under the caps it joined with. */
void vr_detach(vr_member *m, const char *fmt, ...) VR_PRINTF(2, 3);
/* A full check of the books against the slots. Lock held. Returns NULL or
 * what is wrong. */
const char *vr_audit_locked(vr_member *m);
/* Reclaims the slots of dead members; returns how many. */
int vr_reclaim_dead(vr_member *m);
/* The same for the VR_RECLAIM_NEAR occupied slots after this member's own
 * (at a join: probing every slot made each join cost O(members) probes,
 * each O(members) in the kernel, so 256 joining at once cost O(n^3)). */
#define VR_RECLAIM_NEAR 8
int vr_reclaim_near(vr_member *m);
/* 1 if m->fd is still this member's descriptor of its region. */
int vr_fd_is_ours(vr_member *m);

/* How vr_books_take answers a request that does not fit: with the whole
 * denial path, counted (VR_TAKE_COUNT) or not (VR_TAKE_QUIET), or at once
 * with -ENOSPC (VR_TAKE_TRY: a lane's refill, which then asks exactly). */
enum vr_take { VR_TAKE_COUNT, VR_TAKE_QUIET, VR_TAKE_TRY };
/* The books without lanes: reserve bytes on dev (of which `spare` go to a
 * lane: not counted in the peaks) and release them. */
int vr_books_take(vr_member *m, int dev, uint64_t bytes, uint64_t spare, uint64_t *in_use,
                  enum vr_take how);
void vr_books_give(vr_member *m, int dev, uint64_t bytes);

/* ---- lanes.c */

/* Gives this member lanes (at most one member per process has them). */
void vr_lanes_attach(vr_member *m);
/* Before m is freed: its lanes are no longer used. */
void vr_lanes_detach(vr_member *m);

/* ---- region.c */

/* Opens (creating if asked) the registry directory and checks that it is
 * ours and private. Returns a directory fd or a negative errno. */
int vr_open_registry_dir(const char *dir, int create, char *err, size_t errlen);

/* Who may use a region: a writer (member) or a reader (monitor). */
enum vr_region_use { VR_REGION_WRITE, VR_REGION_READ };

/*
 * The one check of a region file, for members and monitors alike: a
 * regular file, owned by us (a reader running as root may read anyone's),
 * private (mode 0600), with a header that is this version's and names this
 * group, and as long as the header says. Reads the header into *hdr and
 * fills *st. Returns 0, or a negative errno with what is wrong in *why.
 */
int vr_region_validate(int fd, const char *group, enum vr_region_use use, struct stat *st,
                       struct vr_region_hdr *hdr, const char **why);

/* Opens an existing door for writing (-ENOENT: there is none) or creates
 * and publishes a new one (-EEXIST: another process published one first).
 * Return an fd or a negative errno, with a message in err. */
int vr_region_open(int dfd, const char *dir, const char *group, const char *name, char *err,
                   size_t errlen);
int vr_region_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                     char *err, size_t errlen);

/* Attaches the segment a door names, checked (owner, mode, size, header,
 * key, group), read-only or read-write. NULL: none that can be used (gone,
 * reused, or not this group's). */
struct vr_region_hdr *vr_segment_attach(const struct vr_region_hdr *door, int rdonly);
void vr_segment_detach(struct vr_region_hdr *h);
/* Maps the pages of the header and of the slots in use (at least the first
 * `slots`) in one system call (writable for a member, read-only for a
 * monitor): a process that has
 * just attached would otherwise take a page fault per slot it reads (a
 * joiner's audit reads every slot, with the group's lock held). */
void vr_segment_prefault(const struct vr_region_hdr *h, uint32_t slots, int write);
/* Creates a group's segment, attaches it and names it in the door fd.
 * Door lock held. Returns 0 or a negative errno. */
int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_region_hdr **out);
/* Takes (lock 1, bounded like the group's lock) or drops (0) the door's
 * own lock (byte 0), held while a segment is found or made. */
int vr_door_lock(int fd, int lock);

#endif /* VRAMCTL_REGISTRY_MEMBER_H */
