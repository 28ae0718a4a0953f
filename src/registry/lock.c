/*
 * lock.c - the group's lock. See layout.h for the layout and
 * docs/architecture.md, "Failure model", for why it is built this way.
 *
 * The lock is one 32-bit word in the segment: 0 when free, else the
 * holder's lock id (its slot index + 1 in the low 11 bits, a per-member
 * token above, and VR_LOCK_WAITERS when someone may sleep on it). It is
 * held for a few loads and stores only, never across a system call on the
 * hot path or a driver call. Naming the holder by its slot (not by a thread
 * id, as a pthread mutex does) lets a waiter decide who holds it with the
 * slot's liveness lock, which works across PID namespaces and PID reuse:
 *   - the word names no slot, or a slot whose liveness byte nobody holds:
 *     the holder is dead or the word is damage; the waiter takes the lock
 *     over and recomputes the totals (lock_recover);
 *   - it names a live member: the waiter sleeps on the word in slices and
 *     gives up after the bound (vr_lock_bound_ns) with -ETIMEDOUT. A member
 *     holds the lock for nanoseconds; one that holds it for seconds is
 *     stopped (a debugger, SIGSTOP) or the word is damage naming a live
 *     slot; the caller then keeps its own books (books.c).
 * So no wait on the lock is ever longer than the bound, and all the waits
 * of one call (knobs.h, vr_call_begin) share it; past a second, the waiter
 * says once what it waits for (the member's notice).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "registry/alive.h"
#include "registry/knobs.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/proc.h"
#include "registry/util.h"

uint32_t vr_lock_id(uint32_t slot_idx)
{
	static _Atomic uint32_t counter;
	uint32_t tok =
	    ((uint32_t)getpid() * 2654435761u) ^ (atomic_fetch_add(&counter, 1) * 40503u);
	return (slot_idx + 1) | ((tok << VR_LOCK_SLOT_BITS) & VR_LOCK_TOKEN_MASK);
}

/* ---- freezing the books (lock held): see member.h */

/* A wait past a second says once (per call) what it waits for, through
 * the member's notice: a stall is never silent. */
static void say_waiting(vr_member *m, uint64_t t0, uint64_t now, uint64_t end, int *said,
                        uint32_t slot, const char *what)
{
	if (!m->notice || !vr_wait_say_due(t0, now, said))
		return;
	char line[200];
	snprintf(line, sizeof(line),
	         "waiting for a live member of the group (slot %u) %s; giving up in %.1f s", slot,
	         what, end > now ? (double)(end - now) / 1e9 : 0.0);
	m->notice(line);
}

#define VR_FREEZE_SPINS 256

/*
 * Phantom operations. A member's operation in flight
 * lasts a few instructions between its first and last write; with the books
 * frozen, one that starts undoes itself at once. A count in flight that
 * stays while the member's process runs (none of its threads stopped or
 * traced, as /proc says) is no operation: a stray write, or a thread that
 * left one through a signal handler's longjmp. Every freeze waited the whole
 * bound for it, each join and denial again (11 s a join). Now: a count that
 * stays VR_PHANTOM_NS while the member runs is damage, and the waiter marks
 * it in the slot's line (incarnation and count); whoever finds the same
 * count there for VR_PHANTOM_MARKED_NS after that calls it damage at once.
 * A member that cannot be seen (another PID namespace), or is stopped, is
 * waited for until the bound, as before.
 */
#define VR_PHANTOM_NS        1000000000ull /* 1 s */
#define VR_PHANTOM_MARKED_NS 10000000ull   /* 10 ms */

/* The mark of slot s's count in flight w: never 0 (the count is not). */
static uint64_t phantom_mark(const struct vr_slot *s, uint64_t w)
{
	uint64_t inc =
	    atomic_load_explicit((_Atomic uint64_t *)&s->incarnation, memory_order_acquire);
	return inc << VR_W_SHIFT | (w & VR_W_BUSY);
}

/* 1 when slot i's member runs: none of its threads stopped or traced, as
 * far as this process can see it (0 when it cannot). */
static int member_runs(vr_member *m, uint32_t i)
{
	if (i == m->slot_idx)
		return 1; /* this process: running */
	const struct vr_slot *s = vr_slot_at(m->hdr, i);
	pid_t pid = vr_slot_pid(m->fd, i);
	uint64_t st = 0;
	if (pid <= 0 && s->pid > 0 && vr_proc_start_time(NULL, s->pid, &st) == 0 &&
	    st == s->start_time)
		pid = s->pid;
	return pid > 0 && vr_proc_stopped(NULL, pid) == 0;
}

int vr_slot_settled(vr_member *m, uint32_t i, uint32_t d, uint64_t *word, int *dead_busy)
{
	_Atomic uint64_t *sw = vr_slot_word(m->hdr, i, d);
	_Atomic uint64_t *ph = vr_phantom_at(m->hdr, i, d);
	const struct vr_slot *s = vr_slot_at(m->hdr, i);
	uint64_t t0 = 0, end = 0, w;
	int said = 0, looked = 0;
	for (int spin = 0; (w = atomic_load_explicit(sw, memory_order_acquire)) & VR_W_BUSY;
	     spin++) {
		if (spin < VR_FREEZE_SPINS)
			continue;
		if (i != m->slot_idx && vr_slot_alive(m->fd, i) == 0) {
			if (dead_busy)
				*dead_busy = 1; /* it died inside an operation */
			break;
		}
		uint64_t now = vr_now_ns();
		if (!t0) {
			t0 = now;
			end = vr_wait_deadline(now);
		}
		uint64_t mark = phantom_mark(s, w);
		if (now - t0 >= VR_PHANTOM_MARKED_NS &&
		    atomic_load_explicit(ph, memory_order_relaxed) == mark)
			return -EUCLEAN;
		if (now - t0 >= VR_PHANTOM_NS && !looked) {
			looked = 1;
			if (member_runs(m, i)) {
				atomic_store_explicit(ph, mark, memory_order_relaxed);
				return -EUCLEAN;
			}
		}
		if (now >= end)
			return -ETIMEDOUT;
		say_waiting(m, t0, now, end, &said, i, "that shows an operation in flight");
		sched_yield();
	}
	*word = w;
	return 0;
}

int vr_reg_freeze(vr_member *m, int *dead_busy)
{
	struct vr_hdr *h = m->hdr;
	uint32_t ndev = vr_hdr_ndev(h), hw = vr_hdr_hw(h);
	if (dead_busy)
		*dead_busy = 0;
	for (uint32_t d = 0; d < ndev; d++) {
		struct vr_hdr_dev *g = &h->dev[d];
		uint64_t w = atomic_fetch_or_explicit((_Atomic uint64_t *)&g->total, VR_TOT_FROZEN,
		                                      memory_order_acq_rel);
		if (!vr_tot_ok(vr_dev_key(g), w)) {
			atomic_store_explicit((_Atomic uint64_t *)&g->total, w,
			                      memory_order_release);
			for (uint32_t e = 0; e < d; e++)
				atomic_fetch_and_explicit((_Atomic uint64_t *)&h->dev[e].total,
				                          ~VR_TOT_FROZEN, memory_order_release);
			return -EBADMSG;
		}
	}
	/* A member's CAS on a total that came before our freeze is a release
	 * that our fetch_or acquired: the mark it made in its slot word before
	 * is visible now, and we wait until it is taken off. One that comes
	 * after finds the total frozen and undoes what it did to its slot word
	 * (vr_slot_settled waits for that too). */
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_slot_at(h, i);
		if (atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) !=
		    VR_SLOT_USED)
			continue;
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t w;
			int rc = vr_slot_settled(m, i, d, &w, dead_busy);
			if (rc != 0) {
				vr_reg_thaw(m, 0);
				return rc;
			}
		}
	}
	return 0;
}

int vr_reg_slots_sum(vr_member *m, uint64_t sum[VR_MAX_DEVICES], int *dead_busy)
{
	struct vr_hdr *h = m->hdr;
	uint32_t ndev = vr_hdr_ndev(h), hw = vr_hdr_hw(h);
	memset(sum, 0, VR_MAX_DEVICES * sizeof(sum[0]));
	for (uint32_t i = 0; i < hw; i++) {
		if (vr_slot_at(h, i)->state != VR_SLOT_USED)
			continue;
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t w;
			int rc = vr_slot_settled(m, i, d, &w, dead_busy);
			if (rc != 0)
				return rc;
			uint64_t v = vr_w_bytes(w);
			sum[d] = sum[d] + v < sum[d] ? UINT64_MAX : sum[d] + v;
		}
	}
	return 0;
}

int vr_reg_thaw(vr_member *m, int recompute)
{
	struct vr_hdr *h = m->hdr;
	uint32_t ndev = vr_hdr_ndev(h);
	uint64_t sum[VR_MAX_DEVICES];
	int rc = recompute ? vr_reg_slots_sum(m, sum, NULL) : 0;
	if (recompute && rc == 0) {
		vr_seq_begin(h);
		for (uint32_t d = 0; d < ndev; d++) {
			struct vr_hdr_dev *g = &h->dev[d];
			uint64_t v = sum[d] > VR_TOT_MAX ? VR_TOT_MAX : sum[d];
			vr_peak_raise(&g->peak, v);
			vr_dev_set_total(g, v);
		}
		vr_seq_end(h);
		return 0;
	}
	for (uint32_t d = 0; d < ndev; d++)
		atomic_fetch_and_explicit((_Atomic uint64_t *)&h->dev[d].total, ~VR_TOT_FROZEN,
		                          memory_order_release);
	return rc;
}

/* Recomputes what a holder that died may have left half done: the
 * per-device totals (from the slots, once the members' operations in
 * flight have drained), frozen totals, and the seqlock parity. Called with
 * the lock held. */
static void lock_recover(vr_member *m)
{
	struct vr_hdr *h = m->hdr;
	uint32_t hw = vr_hdr_hw(h);
	uint32_t ndev = vr_hdr_ndev(h);
	h->ndev = ndev;
	STORE32(&h->slots_hw, hw);
	uint64_t seq = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	if (seq & 1)
		STORE64(&h->seq, seq + 1);
	/* A total that fails its check stays as it is: members find it. */
	if (vr_reg_freeze(m, NULL) == 0)
		vr_reg_thaw(m, 1);
	/* Spilled bytes are changed under the lock only: their total is the
	 * slots' sum. */
	vr_seq_begin(h);
	uint64_t spilled = 0;
	for (uint32_t i = 0; i < hw; i++) {
		if (vr_slot_at(h, i)->state == VR_SLOT_USED)
			for (uint32_t d = 0; d < ndev; d++)
				spilled += vr_counts_at(h, i, d)->spilled;
	}
	h->spilled = spilled;
	vr_seq_end(h);
}

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

/* 1 if the lock word names a live member (this one included), 0 if it
 * names none: a dead member, a free slot, or no slot at all. */
static int holder_alive(vr_member *m, uint32_t word)
{
	uint32_t idx = (word & VR_LOCK_SLOT_MASK);
	if (idx == 0 || idx > VR_SLOTS)
		return 0;
	idx--;
	if (idx == m->slot_idx) /* our own slot: another thread of ours, or damage */
		return (word & ~VR_LOCK_WAITERS) == m->lock_id;
	return vr_slot_alive(m->fd, idx) != 0; /* cannot tell: assume alive */
}

#define VR_LOCK_SLICE_NS 10000000 /* 10 ms */
#define VR_LOCK_SPINS    100

static int lock_slow(vr_member *m, _Atomic uint32_t *w)
{
	uint64_t t0 = vr_now_ns(), end = vr_wait_deadline(t0);
	int rc = 0, said = 0;
	/* The holder last found alive, and not asked about again until a
	 * slice passes with it still holding (each probe walks the door's
	 * list of locks; hundreds of joiners wait here at once). */
	uint32_t seen_alive = UINT32_MAX; /* no holder word has all bits */
	int slept = 0;
	for (int spin = 0;; spin++) {
		uint32_t cur = atomic_load_explicit(w, memory_order_relaxed);
		if (cur == 0) {
			/* Taken after a wait: others may still sleep on it. */
			if (atomic_compare_exchange_weak_explicit(
			        w, &cur, m->lock_id | VR_LOCK_WAITERS, memory_order_acquire,
			        memory_order_relaxed))
				break;
			continue;
		}
		if (spin < VR_LOCK_SPINS)
			continue;
		uint32_t holder = cur & ~VR_LOCK_WAITERS;
		if (holder == seen_alive && slept == 0) {
			/* Found alive before this wake-up: no slice has passed. */
		} else if (!holder_alive(m, cur)) {
			/* Dead holder or damage: take it over as it is. */
			if (atomic_compare_exchange_strong_explicit(
			        w, &cur, m->lock_id | VR_LOCK_WAITERS, memory_order_acquire,
			        memory_order_relaxed)) {
				lock_recover(m);
				break;
			}
			continue;
		} else {
			seen_alive = holder;
		}
		uint64_t now = vr_now_ns();
		if (now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		say_waiting(m, t0, now, end, &said, (holder & VR_LOCK_SLOT_MASK) - 1,
		            "that holds the group's lock");
		if (!(cur & VR_LOCK_WAITERS) &&
		    !atomic_compare_exchange_strong_explicit(
		        w, &cur, cur | VR_LOCK_WAITERS, memory_order_relaxed, memory_order_relaxed))
			continue;
		uint64_t left = end - now;
		uint64_t slice = left < VR_LOCK_SLICE_NS ? left : VR_LOCK_SLICE_NS;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice};
		slept = futex(w, FUTEX_WAIT, cur | VR_LOCK_WAITERS, &ts) < 0 && errno == ETIMEDOUT;
	}
	uint64_t wns = vr_now_ns() - t0;
	uint64_t old = atomic_load_explicit(&m->max_wait_ns, memory_order_relaxed);
	while (wns > old && !atomic_compare_exchange_weak(&m->max_wait_ns, &old, wns))
		;
	return rc;
}

int vr_group_lock(vr_member *m)
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)&m->hdr->lock.word;
	uint32_t zero = 0;
	if (VR_LIKELY(atomic_compare_exchange_strong_explicit(
	        w, &zero, m->lock_id, memory_order_acquire, memory_order_relaxed)))
		return 0;
	return lock_slow(m, w);
}

void vr__wake_waiters(struct vr_hdr *h)
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)&h->wait.wake;
	atomic_fetch_add(w, 1);
	futex(w, FUTEX_WAKE, INT_MAX, NULL);
}

void vr_group_unlock(vr_member *m)
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)&m->hdr->lock.word;
	uint32_t old = atomic_exchange_explicit(w, 0, memory_order_release);
	if (VR_UNLIKELY(old & VR_LOCK_WAITERS))
		futex(w, FUTEX_WAKE, 1, NULL);
}
