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
	_Atomic uint64_t mine; /* what this process holds on the device */
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
	uint32_t audit_tick; /* reserves since the last full check (lock held) */
	struct vr_priv_dev priv[VR_MAX_DEVICES];
	uint64_t spill_budget;         /* the group's, as joined (spill) */
	_Atomic uint64_t spilled_mine; /* what this process holds against it */
};

/* The lock word (lock.c). */
#define VR_LOCK_SLOT_BITS  11
#define VR_LOCK_SLOT_MASK  ((1u << VR_LOCK_SLOT_BITS) - 1)
#define VR_LOCK_WAITERS    0x80000000u
#define VR_LOCK_TOKEN_MASK (~VR_LOCK_SLOT_MASK & ~VR_LOCK_WAITERS)

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
/* A device's check word: ~in_use mixed with its cap and UUID, so that a
 * write of any one of them alone is seen as damage. */
static inline uint64_t vr_dev_check(const struct vr_region_dev *g, uint64_t in_use)
{
	uint64_t u0, u1;
	memcpy(&u0, g->uuid, 8);
	memcpy(&u1, g->uuid + 8, 8);
	return ~in_use ^ (g->cap * 0x9e3779b97f4a7c15ull) ^ (u0 * 0xbf58476d1ce4e5b9ull) ^
	       (u1 * 0x94d049bb133111ebull);
}
static inline int vr_dev_ok(const struct vr_region_dev *g)
{
	return g->check == vr_dev_check(g, g->in_use);
}
/* Sets a device's in-use and its check word together. Lock held. */
static inline void vr_dev_set_in_use(struct vr_region_dev *g, uint64_t v)
{
	g->in_use = v;
	g->check = vr_dev_check(g, v);
}

/* Fields that reclaim_dead() reads without the mutex (slots_hw, a slot's
 * state and incarnation) are written with atomic stores, under the mutex. */
#define STORE32(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_release)
#define STORE64(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)

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
	/* Test-only: stop here, mutex held and the books open (seq odd). */
	if (VR_UNLIKELY(atomic_load_explicit(&vr_stop_in_lock_countdown, memory_order_relaxed) >
	                0) &&
	    atomic_fetch_sub(&vr_stop_in_lock_countdown, 1) == 1)
		raise(SIGSTOP);
}

static inline void books_end(struct vr_region_hdr *h)
{
	uint64_t s = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->seq, s + 1, memory_order_release);
}

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
 * until then: live.c). */
int vr_member_gone(const struct vr_slot *s);
/* 1 if a USED slot other than self belongs to a process not yet reaped
 * (dead or alive): the group is not empty. Lock held. */
int vr_unreaped_others(struct vr_region_hdr *h, uint32_t self);
/* Returns a dead slot's bytes to the group and frees it. Lock held.
 * Returns 0, or -EBADMSG (nothing changed) when the slot holds more than
 * the group's total: the books are damaged. */
int vr_slot_reclaim_locked(struct vr_region_hdr *h, struct vr_slot *s);
/* 1 if a member other than slot `self` holds any slot's liveness byte. */
int vr_others_alive(int fd, uint32_t self);

/* ---- books.c */

/* Marks the member's books damaged (once): it says why through its notice
 * callback and keeps its own books under the caps it joined with. */
void vr_detach(vr_member *m, const char *fmt, ...) VR_PRINTF(2, 3);
/* A full check of the books against the slots. Lock held. Returns NULL or
 * what is wrong. */
const char *vr_audit_locked(vr_member *m);
/* Reclaims the slots of dead members; returns how many. */
int vr_reclaim_dead(vr_member *m);
/* 1 if m->fd is still this member's descriptor of its region. */
int vr_fd_is_ours(vr_member *m);

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
/* Creates a group's segment, attaches it and names it in the door fd.
 * Door lock held. Returns 0 or a negative errno. */
int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_region_hdr **out);
/* Takes (lock 1, bounded like the group's lock) or drops (0) the door's
 * own lock (byte 0), held while a segment is found or made. */
int vr_door_lock(int fd, int lock);

#endif /* VRAMCTL_REGISTRY_MEMBER_H */
