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
#include <sys/stat.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "registry/region.h"
#include "registry/registry.h"

struct vr_member {
	struct vr_region_hdr *hdr;
	struct vr_slot *slot;
	int fd;
	dev_t st_dev; /* the region file, to know our fd is still ours */
	ino_t st_ino;
	uint32_t slot_idx;
	uint64_t incarnation;
	_Atomic uint64_t max_wait_ns;
};

/* Fields that reclaim_dead() reads without the mutex (slots_hw, a slot's
 * state and incarnation) are written with atomic stores, under the mutex. */
#define STORE32(p, v) atomic_store_explicit((_Atomic uint32_t *)(p), (v), memory_order_release)
#define STORE64(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)

uint64_t vr_now_ns(void);

/* ---- lock.c */

/* Test-only: VRAMCTL_TEST_STOP_IN_LOCK=N (read at the first join). */
extern _Atomic long vr_stop_in_lock_countdown;
void vr_read_test_env(void);

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

/* Takes the group's lock (0 or a negative errno); recovers what a holder
 * that died left half done. */
int vr_region_lock(vr_member *m);
void vr_region_unlock(vr_member *m);

/* ---- live.c */

/* 1 if some open file description other than fd's holds slot i's liveness
 * byte, 0 if none does (its owner is gone), negative errno on error. */
int vr_slot_alive(int fd, uint32_t i);
/* Returns a dead slot's bytes to the group and frees it. Lock held. */
void vr_slot_reclaim_locked(struct vr_region_hdr *h, struct vr_slot *s);
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

/* Opens an existing region for writing (-ENOENT: there is none) or creates
 * and publishes a new one (-EEXIST: another process published one first).
 * Return an fd or a negative errno, with a message in err. */
int vr_region_open(int dfd, const char *dir, const char *group, const char *name, char *err,
                   size_t errlen);
int vr_region_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                     char *err, size_t errlen);

#endif /* VRAMCTL_REGISTRY_MEMBER_H */
