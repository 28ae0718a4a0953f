/*
 * lanes.c - the allocation path most calls take: a thread's own spare.
 *
 * A reserve or release in the books (books.c) costs a handful of atomic
 * read-modify-writes on words other processes write too. Most allocations
 * are small and come and go in the same thread, so each thread of the
 * process's member keeps a lane: bytes reserved in the books (counted in
 * the member's slot word and the group's total) but not handed out yet.
 * A request up to the lane's reach is served from the thread's lane with
 * two plain stores into a cache line no other thread writes; a release up
 * to the reach goes back into it. Only when the lane runs short does the
 * thread reserve from the books what the request needs plus a quantum,
 * and only when it holds more than its reach plus a quantum does it give
 * the excess back, down to a quantum (docs/architecture.md, "Lanes").
 *
 * The quantum (member.h, vr_lane_quantum) is a 65,536th of the cap, at
 * most 1 MiB; the reach (vr_lane_reach) is a 1,024th of the cap in whole
 * 2 MiB pages, at most 32 MiB, never less than the quantum: so the card's
 * pages and their small multiples, the blocks real programs take (the
 * driver hands out whole 2 MiB pages above 1 MiB, frameworks take 2 MiB
 * and 20 MiB segments), go through the lane as 4 KiB blocks do. A thread
 * that allocates and frees blocks of one size up to the reach goes to the
 * books once; blocks past the reach always do (bench/README.md).
 *
 * What it keeps true:
 *   - The cap is never passed: spare is reserved before it is handed out.
 *   - The books' invariants are the ones without lanes (layout.h): a lane
 *     moves bytes between "handed out" and "spare" inside a slot word that
 *     does not change. A member that dies, at any instruction, is
 *     reclaimed whole, spare included.
 *   - What readers show as held is the slot word less its lanes' spare
 *     (vr_slot_used); each lane's word is published by its thread.
 *   - A request that finds no room asks the books exactly, after giving
 *     back its own lane's spare. Other threads' spare (at most a reach and
 *     a quantum per lane: a 1,024th and a 65,536th of the cap, 33 MiB at
 *     most; 8 lanes a process, so under 0.8 % of the cap a process) is not
 *     taken from them: such a request may be refused that much early
 *     (docs/usage.md, "What is counted").
 *   - Small caps (under 256 MiB) have no lanes: the books are exact there.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "registry/books.h"
#include "registry/lanes.h"
#include "registry/member.h"

/* The member of this process that has lanes, and how many threads are
 * inside a lane's exit right now (vr_lanes_detach waits for them). */
static _Atomic(vr_member *) laned;
static _Atomic int exiting;
static _Atomic uint64_t next_gen;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* This thread's lane: valid while gen is its member's lane_gen. */
struct lane {
	uint64_t gen;
	uint64_t spare;
	int dev; /* the device spare is held on, -1: none */
	int idx;
	/* Of device dev (set by point()): its quantum (0: none) and reach,
	 * the lane's word in the slot and the device's number in it, and
	 * where the peaks are raised from. */
	uint64_t q, reach;
	uint64_t tag;
	_Atomic uint64_t *word;
	_Atomic uint64_t *held, *total;
	const _Atomic uint64_t *cap; /* the device's cap in the books */
	uint64_t *slot_peak, *group_peak;
};
static __thread struct lane me __attribute__((tls_model("initial-exec")));

static inline void publish(const struct lane *l)
{
	atomic_store_explicit(l->word, l->spare | l->tag, memory_order_relaxed);
}

/* Makes dev (-1: none) the lane's device. */
static void point(vr_member *m, struct lane *l, int dev)
{
	l->dev = dev;
	l->word = (_Atomic uint64_t *)&m->slot->lanes[l->idx].word;
	l->q = dev >= 0 ? m->priv[dev].quantum : 0;
	l->reach = dev >= 0 ? m->priv[dev].reach : 0;
	l->tag = dev >= 0 ? (uint64_t)(dev + 1) << VR_LANE_DEV_SHIFT : 0;
	if (dev < 0)
		return;
	l->held = vr_slot_word(m->hdr, m->slot_idx, (uint32_t)dev);
	l->total = (_Atomic uint64_t *)&m->hdr->dev[dev].total;
	l->cap = (const _Atomic uint64_t *)&m->hdr->dev[dev].cap;
	l->slot_peak = &vr_counts_at(m->hdr, m->slot_idx, (uint32_t)dev)->peak;
	l->group_peak = &m->hdr->dev[dev].peak;
}

/* Gives the lane's spare back to the books. */
static void flush(vr_member *m, struct lane *l)
{
	uint64_t b = l->spare;
	int dev = l->dev;
	l->spare = 0;
	point(m, l, -1);
	publish(l);
	if (b)
		vr_reg_give(m, dev, b);
}

static void lane_exit(void *arg)
{
	(void)arg;
	atomic_fetch_add(&exiting, 1);
	vr_member *m = atomic_load(&laned);
	if (m && me.gen == m->lane_gen) {
		flush(m, &me);
		atomic_fetch_and(&m->lanes_taken, ~(1u << me.idx));
	}
	me.gen = 0;
	me.q = 0;
	me.reach = 0;
	atomic_fetch_sub(&exiting, 1);
}

static void exit_key_make(void)
{
	if (pthread_key_create(&exit_key, lane_exit) != 0)
		exit_key = (pthread_key_t)-1;
}

void vr_lanes_attach(vr_member *m)
{
	pthread_once(&exit_once, exit_key_make);
	vr_member *none = NULL;
	if (exit_key == (pthread_key_t)-1 || !atomic_compare_exchange_strong(&laned, &none, m))
		return; /* another member of this process has them */
	m->lane_gen = atomic_fetch_add(&next_gen, 1) + 1;
}

void vr_lanes_detach(vr_member *m)
{
	vr_member *was = m;
	if (!m || !m->lane_gen || !atomic_compare_exchange_strong(&laned, &was, NULL))
		return;
	/* A thread exiting right now may still be giving its spare back. */
	for (int i = 0; i < 100000 && atomic_load(&exiting); i++)
		sched_yield();
}

/* Makes l this thread's lane of m: 1, or 0 when all are taken. */
static int lane_take(vr_member *m, struct lane *l)
{
	uint32_t t = atomic_load_explicit(&m->lanes_taken, memory_order_relaxed);
	for (;;) {
		if (t == (1u << VR_LANES) - 1)
			return 0;
		int idx = __builtin_ctz(~t);
		if (atomic_compare_exchange_weak(&m->lanes_taken, &t, t | 1u << idx)) {
			l->gen = m->lane_gen;
			l->idx = idx;
			l->spare = 0;
			point(m, l, -1);
			publish(l);
			(void)pthread_setspecific(exit_key, m);
			return 1;
		}
	}
}

/* Raises the peaks to what is handed out once l's spare is set aside
 * (total: the group's, as just read). */
static inline void lane_peaks(const struct lane *l, uint64_t total)
{
	uint64_t held = vr_w_bytes(atomic_load_explicit(l->held, memory_order_relaxed));
	vr_peak_raise_noted(l->slot_peak, held > l->spare ? held - l->spare : 0);
	vr_peak_raise_noted(l->group_peak, total > l->spare ? total - l->spare : 0);
}

/* A reserve the lane could not serve from its spare. */
static int reserve_slow(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, enum vr_take how)
{
	struct lane *l = &me;
	int known = dev >= 0 && dev < VR_MAX_DEVICES;
	uint64_t q = known ? m->priv[dev].quantum : 0, reach = known ? m->priv[dev].reach : 0;
	int mine = m->lane_gen && (l->gen == m->lane_gen || lane_take(m, l));
	if (!mine || vr_is_detached(m))
		return vr_reg_take(m, dev, bytes, 0, in_use, how);
	if (bytes > reach) {
		/* Too big for a lane: exactly, and before a refusal, with this
		 * thread's spare given back. */
		int r = l->spare ? vr_reg_take(m, dev, bytes, 0, in_use, VR_TAKE_TRY) : -ENOSPC;
		if (r != -ENOSPC)
			return r;
		flush(m, l);
		return vr_reg_take(m, dev, bytes, 0, in_use, how);
	}
	if (l->spare && (l->dev != dev || bytes <= l->spare)) {
		/* Another device's spare, or spare enough but the group is over
		 * its cap (the lane fast path): the spare goes back, the books decide. */
		int over = l->dev == dev;
		flush(m, l);
		if (over)
			return vr_reg_take(m, dev, bytes, 0, in_use, how);
	}
	/* Enough for this request with a quantum left over, or exactly. */
	uint64_t need = bytes - l->spare;
	if (vr_reg_take(m, dev, need + q, q, in_use, VR_TAKE_TRY) == 0) {
		if (l->dev != dev)
			point(m, l, dev);
		l->spare = q;
		publish(l);
		return 0;
	}
	flush(m, l);
	return vr_reg_take(m, dev, bytes, 0, in_use, how);
}

static inline int reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use, enum vr_take how)
{
	struct lane *l = &me;
	/* bytes - 1 < spare: 0 < bytes <= spare. A lane with spare belongs to
	 * a member with lanes (gen != 0). */
	if (VR_LIKELY(l->gen == m->lane_gen && l->dev == dev && bytes - 1 < l->spare &&
	              !vr_is_detached(m))) {
		/* Spare is handed out only while the group is within its cap:
		 * over it (the cap lowered by `vramctl limit` below what the
		 * group holds, or overhead grown past it) every reserve goes to
		 * the books, which refuse it. */
		uint64_t total = vr_tot_bytes(atomic_load_explicit(l->total, memory_order_relaxed));
		if (VR_LIKELY(total <= atomic_load_explicit(l->cap, memory_order_relaxed))) {
			l->spare -= bytes;
			publish(l);
			lane_peaks(l, total);
			return 0;
		}
	}
	return reserve_slow(m, dev, bytes, in_use, how);
}

int vr_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	return m ? reserve(m, dev, bytes, in_use, VR_TAKE_COUNT) : -EINVAL;
}

int vr_reserve_quiet(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	return m ? reserve(m, dev, bytes, in_use, VR_TAKE_QUIET) : -EINVAL;
}

/* A release the lane's fast path did not take. */
static void release_slow(vr_member *m, int dev, uint64_t bytes)
{
	struct lane *l = &me;
	int mine = m->lane_gen && (l->gen == m->lane_gen || lane_take(m, l));
	if (mine && !vr_is_detached(m) && dev >= 0 && dev < VR_MAX_DEVICES && l->spare == 0 &&
	    bytes - 1 < m->priv[dev].reach) {
		point(m, l, dev);
		l->spare = bytes;
		publish(l);
		return;
	}
	vr_reg_give(m, dev, bytes);
}

/* The lane holds more than its reach and a quantum: all but a quantum goes
 * back to the books. */
static void give_excess(vr_member *m, struct lane *l)
{
	uint64_t excess = l->spare - l->q;
	l->spare = l->q;
	publish(l);
	vr_reg_give(m, l->dev, excess);
}

void vr_release(vr_member *m, int dev, uint64_t bytes)
{
	struct lane *l = &me;
	/* bytes - 1 < reach: 0 < bytes <= reach, and reach != 0 only while
	 * the lane is this member's, pointed at a device. */
	if (VR_LIKELY(m && l->gen == m->lane_gen && l->dev == dev && bytes - 1 < l->reach &&
	              !vr_is_detached(m))) {
		l->spare += bytes;
		if (VR_UNLIKELY(l->spare > l->reach + l->q))
			give_excess(m, l);
		else
			publish(l);
		return;
	}
	if (m)
		release_slow(m, dev, bytes);
}
