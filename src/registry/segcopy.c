/*
 * segcopy.c - a reader's copy of one group's segment (segcopy.h).
 *
 * The segment is copied under its seqlock: the copy is retried while a
 * writer was active, a bounded number of times; after that the last copy is
 * used (every counter is an aligned 64-bit word, so each number is real,
 * only their sum may be torn) and the group is marked not consistent.
 * Readers never take the lock and never write, so a monitor can neither
 * block nor corrupt a job.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "registry/member.h"
#include "registry/segcopy.h"

#define SEQ_TRIES 64

/* The bytes a copied slot's lanes hold spare on device d. */
static uint64_t copy_spare(const struct vr_slot_copy *c, uint32_t d)
{
	uint64_t spare = 0;
	for (int i = 0; i < VR_LANES; i++)
		spare += vr_lane_spare_on(c->lanes[i], d);
	return spare;
}

int vr__seg_copy(struct vr_seg_copy *c, const struct vr_hdr *h)
{
	struct vr_slot_copy *sc = c->sc;
	struct vramctl_counts *sd = c->sd;
	int nsc = 0, consistent = 0, mismatch = 0, same = 0, last_nsc = -1, clean = 0;
	uint64_t last_sum = 0, last_total = 0;
	uint32_t ndev = 0;
	uint32_t growth = 0;
	uint64_t spill_budget = 0, spilled = 0, denials = 0, park_budget = 0, parked = 0;
	uint64_t *pk = c->pk;
	for (int t = 0; t < SEQ_TRIES; t++) {
		uint64_t s1 =
		    atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_acquire);
		/* A writer is inside (or stopped inside): give it the CPU, but
		 * copy anyway, so that the last try leaves a (torn) copy. */
		if ((s1 & 1) && t > 0)
			sched_yield();
		ndev = h->ndev;
		if (ndev > VR_MAX_DEVICES)
			ndev = VR_MAX_DEVICES;
		uint32_t hw = h->slots_hw;
		if (hw > VR_SLOTS)
			hw = VR_SLOTS;
		memcpy(c->gdev, h->dev, ndev * sizeof(c->gdev[0]));
		memcpy(c->gname, h->group, sizeof(c->gname));
		memcpy(c->spec, h->limit_spec, sizeof(c->spec));
		memcpy(&c->changes, vr_changes_at((struct vr_hdr *)h), sizeof(c->changes));
		growth = h->growth;
		spill_budget = h->spill_budget;
		spilled = h->spilled;
		denials = h->denials;
		park_budget = h->wait.park_budget;
		parked = h->wait.parked;
		if (!sc)
			sc = c->sc = malloc((size_t)VR_SLOTS * sizeof(*sc));
		if (sc && (!sd || !pk || ndev > c->sd_ndev)) {
			free(sd);
			free(pk);
			c->sd_ndev = ndev;
			sd = c->sd = malloc((size_t)VR_SLOTS * (ndev ? ndev : 1) * sizeof(*sd));
			pk = c->pk = malloc((size_t)VR_SLOTS * (ndev ? ndev : 1) * sizeof(*pk));
		}
		if (!sc || !sd || !pk)
			return -ENOMEM;
		nsc = 0;
		for (uint32_t i = 0; i < hw; i++) {
			const struct vr_slot *s = vr_slot_at((struct vr_hdr *)h, i);
			if (s->state != VR_SLOT_USED)
				continue;
			struct vr_slot_copy *sl = &sc[nsc];
			sl->idx = i;
			sl->pid = s->pid;
			sl->start_time = s->start_time;
			sl->nspid_outer = s->nspid_outer;
			sl->uid = s->uid;
			sl->host_pinned = s->host_pinned;
			sl->ipc_ns = s->ipc_ns;
			sl->flags = s->flags;
			memcpy(sl->command, s->command, sizeof(sl->command));
			for (int l = 0; l < VR_LANES; l++)
				sl->lanes[l] = vr_lane_word(s, (uint32_t)l);
			memcpy(&sl->wait, &s->wait, sizeof(sl->wait));
			for (uint32_t d = 0; d < ndev; d++) {
				const struct vr_counts_line *ln =
				    (const struct vr_counts_line *)(const void *)vr_counts_at(
				        (struct vr_hdr *)h, i, d);
				sd[(size_t)nsc * ndev + d] = ln->c;
				pk[(size_t)nsc * ndev + d] = ln->parked;
			}
			nsc++;
		}
		/* The copy's loads must not pass the second read of seq: x86 keeps
		 * loads in order, so a compiler barrier is enough there. */
#if defined(__x86_64__) || defined(__i386__)
		atomic_signal_fence(memory_order_seq_cst);
#else
		atomic_thread_fence(memory_order_acquire);
#endif
		uint64_t s2 =
		    atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
		/* Members change the totals and their slot words without the
		 * seqlock: a copy is of one moment when no copied slot was busy
		 * and no total moved while it was taken. Then the totals are the
		 * slots' sums, or the books are damaged once four such copies in
		 * a row differ alike. */
		int quiet = s1 == s2 && !(s1 & 1);
		clean = quiet;
		uint64_t sum[VR_MAX_DEVICES] = {0};
		for (int k = 0; quiet && k < nsc; k++)
			for (uint32_t d = 0; d < ndev; d++) {
				uint64_t w = sd[(size_t)k * ndev + d].in_use;
				quiet &= !(w & VR_W_BUSY);
				sum[d] += vr_w_bytes(w);
			}
		int equal = quiet;
		for (uint32_t d = 0; quiet && d < ndev; d++) {
			quiet &= c->gdev[d].total == vr_dev_total_word(&h->dev[d]);
			equal &= vr_tot_bytes(c->gdev[d].total) == sum[d];
		}
		if (quiet && equal) {
			consistent = 1;
			break;
		}
		/* The same mismatch in 4 quiet copies in a row, a scheduler's
		 * turn apart: not a member caught between two operations while
		 * the totals read the same before and after the copy. */
		if (quiet && nsc == last_nsc && sum[0] == last_sum &&
		    vr_tot_bytes(c->gdev[0].total) == last_total) {
			if (++same >= 3) {
				mismatch = 1;
				break;
			}
		} else {
			same = 0;
		}
		last_nsc = quiet ? nsc : -1;
		last_sum = sum[0];
		last_total = ndev ? vr_tot_bytes(c->gdev[0].total) : 0;
		if (quiet)
			sched_yield();
		if (!quiet && t > 2)
			sched_yield();
	}
	/* What members hold is what they handed out: their lanes' spare is
	 * in the totals (books_in_use), not in their in_use. */
	for (int k = 0; k < nsc; k++)
		for (uint32_t d = 0; d < ndev; d++) {
			uint64_t held = vr_w_bytes(sd[(size_t)k * ndev + d].in_use);
			uint64_t spare = copy_spare(&sc[k], d);
			/* Nor what a wait has set aside for a request not granted
			 * yet: shown as waiting. */
			if (sc[k].wait.dev == d + 1)
				spare += sc[k].wait.claimed;
			sd[(size_t)k * ndev + d].in_use = held - (spare < held ? spare : held);
		}
	c->lockword = atomic_load_explicit((_Atomic uint32_t *)&h->lock.word, memory_order_relaxed);
	c->gname[sizeof(c->gname) - 1] = '\0';
	c->spec[sizeof(c->spec) - 1] = '\0';
	c->nsc = nsc;
	c->ndev = ndev;
	c->consistent = consistent;
	c->mismatch = mismatch;
	c->seq_clean = clean;
	c->growth = growth;
	c->spill_budget = spill_budget;
	c->spilled = spilled;
	c->denials = denials;
	c->park_budget = park_budget;
	c->parked = parked;
	return 0;
}
