/*
 * reclaim.c - reclaiming the slots of dead members.
 *
 * A USED slot whose liveness byte nobody holds (alive.c) belongs to a dead
 * process; once that process is reaped (and NVML no longer lists it:
 * held.c), its bytes go back to the group and its slot is freed. PIDs are
 * only recorded for display.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "registry/alive.h"
#include "registry/damage.h"
#include "registry/held.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/reclaim.h"
#include "registry/proc.h"

/*
 * A member whose liveness lock has dropped is dead, but the driver may still
 * hold its memory: the lock goes when the process closes its files on the
 * way out, and the driver frees a context when it is torn down, which on a
 * real GPU takes a while for a large one. Its bytes stay held until the
 * process is reaped: while /proc still shows it (the same PID and start
 * time, in our namespace or, seen from the host, its outer PID), it is not
 * gone. Returns 1 when it is. Not exact (a join's look for the dead): a
 * PID that exists counts as not gone without reading its start time, which
 * errs toward keeping the slot for a later, exact look (a denial's).
 */
/* 1 if pid exists and (exact) is the process that started at st. */
static int still_there(int32_t pid, uint64_t st, int exact)
{
	uint64_t now;
	/* kill(pid, 0) first: a PID that does not exist needs no /proc read,
	 * and most dead members a join comes across are reaped already. */
	return pid > 0 && vr_proc_exists(NULL, pid) &&
	       (!exact || (vr_proc_start_time(NULL, pid, &now) == 0 && now == st));
}

int vr_member_gone(const struct vr_slot *s, int exact)
{
	uint64_t st = s->start_time;
	if (!st)
		return 1; /* nothing to compare: the lock decides */
	return !still_there(s->pid, st, exact) &&
	       (s->nspid_outer == s->pid || !still_there(s->nspid_outer, st, exact));
}

int vr_unreaped_others(struct vr_hdr *h, uint32_t self)
{
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_slot_at(h, i);
		if (i != self && s->state == VR_SLOT_USED && !vr_member_gone(s, 1))
			return 1;
	}
	return 0;
}

uint32_t vr_dead_held(vr_member *m, uint64_t *inc)
{
	struct vr_hdr *h = m->hdr;
	uint32_t hw = vr_hdr_hw(h);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_slot_at(h, i);
		uint64_t c =
		    atomic_load_explicit((_Atomic uint64_t *)&s->incarnation, memory_order_acquire);
		if (i == m->slot_idx ||
		    atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) !=
		        VR_SLOT_USED ||
		    vr_slot_alive(m->fd, i) != 0 || !vr_dead_on_gpu(m, i, s, c))
			continue;
		*inc = c;
		return i + 1;
	}
	return 0;
}

/* Takes b bytes off a device's total by compare-and-swap (members change
 * it at the same time). Lock held. -EBADMSG: its check fails, or it holds
 * less than b. */
static int total_sub(struct vr_hdr_dev *g, uint64_t b)
{
	_Atomic uint64_t *t = (_Atomic uint64_t *)&g->total;
	uint64_t key = vr_dev_key(g), w = atomic_load_explicit(t, memory_order_relaxed);
	do {
		if (!vr_tot_ok(key, w) || vr_tot_bytes(w) < b)
			return -EBADMSG;
	} while (!atomic_compare_exchange_weak_explicit(
	    t, &w, (w & VR_TOT_FROZEN) | vr_tot_make(key, vr_tot_bytes(w) - b),
	    memory_order_acq_rel, memory_order_relaxed));
	return 0;
}

/* Frees slot i and gives its spilled bytes back (kept under the lock). Its
 * numbers stay as they are: nothing reads a free slot's, and whoever takes
 * it clears them (layout.h). */
static void slot_free(struct vr_hdr *h, uint32_t i)
{
	struct vr_slot *s = vr_slot_at(h, i);
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t sp = vr_counts_at(h, i, d)->spilled;
		h->spilled -= sp < h->spilled ? sp : h->spilled;
		/* What it had parked, and its share of the budget. */
		uint64_t pk = ((struct vr_counts_line *)(void *)vr_counts_at(h, i, d))->parked;
		h->wait.parked -= pk < h->wait.parked ? pk : h->wait.parked;
	}
	/* A member that died waiting is no longer waited for. */
	if (atomic_load_explicit((_Atomic uint32_t *)&s->wait.dev, memory_order_relaxed)) {
		STORE32(&s->wait.dev, 0);
		atomic_fetch_sub((_Atomic uint32_t *)&h->wait.waiters, 1);
	}
	STORE32(&s->state, VR_SLOT_FREE);
	STORE64(&s->incarnation, s->incarnation + 1);
	/* The next joiner starts looking here (advisory). */
	STORE32(&h->slot_hint, i);
}

int vr_slot_reclaim_locked(vr_member *m, uint32_t i)
{
	struct vr_hdr *h = m->hdr;
	uint32_t ndev = vr_hdr_ndev(h);
	uint64_t held[VR_MAX_DEVICES];
	int busy = 0;
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t w = atomic_load_explicit(vr_slot_word(h, i, d), memory_order_acquire);
		busy |= (w & VR_W_BUSY) != 0;
		held[d] = vr_w_bytes(w);
		if (held[d] > vr_dev_total(&h->dev[d]))
			return -EBADMSG;
	}
	if (busy) {
		/* Its owner died inside an operation: the totals may count part
		 * of it. Once every live member's operations have drained, the
		 * totals are the sum of the slots left. */
		int rc = vr_reg_freeze(m, NULL);
		if (rc == 0) {
			slot_free(h, i);
			vr_reg_thaw(m, 1);
			return 0;
		}
		if (rc != -ETIMEDOUT && rc != -EUCLEAN)
			return rc;
		/* A live member is stopped inside one (or shows a phantom one,
		 * which its next audit says): take off what the slot holds. What the dead one had
		 * in flight stays counted, never less (its slot word moves before the total on a
		 * release and after it on a reserve), until a later reclaim or recovery. */
	}
	/* Freed first: a holder that dies here leaves the total too high. */
	slot_free(h, i);
	for (uint32_t d = 0; d < ndev; d++)
		if (held[d] && total_sub(&h->dev[d], held[d]) != 0)
			return -EBADMSG;
	return 0;
}

/*
 * Reclaims the slots of dead members: of every slot, or (limit > 0) of the
 * first `limit` occupied slots after this member's own, in slot order,
 * wrapping. The liveness probes (system calls) run without the lock; a
 * slot seen USED and unheld with incarnation X is reclaimed under the lock
 * only if it is still USED with incarnation X: a member takes its lock
 * before it marks the slot USED and marks it FREE before it drops the
 * lock, so "USED, unheld, same incarnation" can only mean its owner died.
 * Returns the number of slots reclaimed.
 */
static int reclaim(vr_member *m, uint32_t limit)
{
	struct vr_hdr *h = m->hdr;
	uint32_t hw = vr_hdr_hw(h), probed = 0;
	uint32_t first = m->slot_idx + 1 < hw ? m->slot_idx + 1 : 0;
	int total = 0;
	uint32_t k = 0;
	while (k < hw && (!limit || probed < limit)) {
		struct {
			uint32_t idx;
			uint64_t inc;
		} cand[32];
		int n = 0;
		for (; k < hw && n < (int)VR_ARRAY_LEN(cand) && (!limit || probed < limit); k++) {
			uint32_t i = (first + k) % hw;
			if (i == m->slot_idx)
				continue;
			struct vr_slot *s = vr_slot_at(h, i);
			uint64_t inc = atomic_load_explicit((_Atomic uint64_t *)&s->incarnation,
			                                    memory_order_acquire);
			if (atomic_load_explicit((_Atomic uint32_t *)&s->state,
			                         memory_order_acquire) != VR_SLOT_USED)
				continue;
			probed++;
			if (vr_slot_alive(m->fd, i) == 0 && vr_member_gone(s, !limit) &&
			    !vr_dead_on_gpu(m, i, s, inc)) {
				cand[n].idx = i;
				cand[n].inc = inc;
				n++;
			}
		}
		if (n == 0)
			continue;
		if (atomic_load_explicit(&m->detached, memory_order_relaxed))
			return total;
		if (vr_group_lock(m) != 0) {
			vr_detach(m, "the group's lock stayed held by a live member");
			return total;
		}
		int bad = 0;
		for (int c = 0; c < n && !bad; c++) {
			struct vr_slot *s = vr_slot_at(h, cand[c].idx);
			if (s->state == VR_SLOT_USED && s->incarnation == cand[c].inc) {
				bad = vr_slot_reclaim_locked(m, cand[c].idx) != 0;
				total += !bad;
			}
		}
		vr_group_unlock(m);
		if (bad) {
			vr_detach(m, "a dead member's slot holds more than the group's total");
			return total;
		}
	}
	return total;
}

int vr_reclaim_dead(vr_member *m)
{
	int n = reclaim(m, 0);
	if (n > 0)
		vr_wake_waiters(m->hdr); /* their room */
	return n;
}

int vr_reclaim_near(vr_member *m)
{
	return reclaim(m, VR_RECLAIM_NEAR);
}

int vr_reclaim(vr_member *m)
{
	if (!m)
		return -EINVAL;
	return vr_reclaim_dead(m);
}

/* 1 if m->fd is still our descriptor: the program may have closed it and
 * the number may now belong to another file, or to another member's open
 * of the same file. Call while our mapping (hence our lock) still exists. */
int vr_fd_is_ours(vr_member *m)
{
	struct stat st;
	if (fstat(m->fd, &st) != 0 || st.st_dev != m->st_dev || st.st_ino != m->st_ino)
		return 0;
	/* Same file; same open file description? Through ours, our own slot
	 * lock does not conflict; through another member's, it does. */
	return vr_slot_alive(m->fd, m->slot_idx) == 0;
}
