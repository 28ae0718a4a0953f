/*
 * park.c - the books of a parked member (registry.h, "Parking").
 *
 * A member whose process the driver checkpointed (its device memory moved
 * to host memory) holds nothing on the card: its bytes leave the group's
 * totals, by the ordinary release (so the books' invariant holds at every
 * instant and waiters are woken), and are kept in its line of each device
 * as parked, against the group's one host budget for parking (the
 * header's park_budget, fixed by whoever started the group; parked, the
 * sum). Before the process runs again they come back by ordinary reserves
 * (the caller waits for room like any reserve: wait.c), then the record
 * is cleared. A parked member that dies is reclaimed like any other: its
 * parked bytes and its share of the budget go with its slot (reclaim.c).
 *
 * Its threads are quiet meanwhile (its library holds every driver call
 * at its gate, and the driver holds the rest), so the slot words do not
 * move under these calls: they take the group's lock only for the budget
 * and the records, which monitors copy under the seqlock.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "common/clock.h"
#include "registry/books.h"
#include "registry/damage.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/park.h"
#include "registry/reclaim.h"

static struct vr_counts_line *line_of(vr_member *m, uint32_t d)
{
	return (struct vr_counts_line *)(void *)vr_counts_at(m->hdr, m->slot_idx, d);
}

/* The lock, with the books checked (any device of the group will do). 1
 * held, 0 detached, negative errno. */
static int lock_books(vr_member *m)
{
	for (int d = 0; d < VR_MAX_DEVICES; d++)
		if (m->priv[d].known)
			return vr__lock_checked(m, d);
	return -EINVAL;
}

uint64_t vr_park_held(vr_member *m)
{
	uint64_t sum = 0;
	if (!m || vr_is_detached(m))
		return 0;
	uint32_t ndev = vr_hdr_ndev(m->hdr);
	for (uint32_t d = 0; d < ndev; d++)
		sum += vr_slot_held(m->hdr, m->slot_idx, d);
	return sum;
}

int vr_park_reserve(vr_member *m, uint64_t bytes, uint64_t *parked, uint64_t *budget)
{
	if (!m)
		return -EINVAL;
	for (int round = 0;; round++) {
		int locked = lock_books(m);
		if (locked <= 0)
			return locked < 0 ? locked : -ENOTSUP;
		struct vr_hdr *h = m->hdr;
		uint64_t cur = h->wait.parked, b = h->wait.park_budget;
		int rc = 0;
		if (bytes > b || cur > b - bytes) {
			rc = -ENOSPC;
		} else {
			vr_seq_begin(h);
			h->wait.parked = cur + bytes;
			vr_seq_end(h);
			cur += bytes;
		}
		vr_group_unlock(m);
		if (parked)
			*parked = cur;
		if (budget)
			*budget = b;
		/* What dead members parked comes back before a refusal. */
		if (rc != -ENOSPC || round > 0 || vr_reclaim_dead(m) <= 0)
			return rc;
	}
}

void vr_park_unreserve(vr_member *m, uint64_t bytes)
{
	if (!m || lock_books(m) <= 0)
		return;
	struct vr_hdr *h = m->hdr;
	vr_seq_begin(h);
	h->wait.parked -= bytes < h->wait.parked ? bytes : h->wait.parked;
	vr_seq_end(h);
	vr_group_unlock(m);
}

int vr_park_out(vr_member *m, uint64_t out[VR_MAX_DEVICES])
{
	if (!m || vr_is_detached(m))
		return -ENOTSUP;
	struct vr_hdr *h = m->hdr;
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < VR_MAX_DEVICES; d++)
		out[d] = 0;
	/* The records first (a reader then sees parked bytes before the
	 * total drops: never less than the member holds, counted twice at
	 * worst for a moment), then the bytes leave by ordinary releases. */
	int locked = lock_books(m);
	if (locked <= 0)
		return locked < 0 ? locked : -ENOTSUP;
	vr_seq_begin(h);
	for (uint32_t d = 0; d < ndev; d++) {
		out[d] = vr_slot_held(h, m->slot_idx, d);
		STORE64(&line_of(m, d)->parked, out[d]);
	}
	STORE64(&m->slot->wait.parked_since, vr_real_ns());
	STORE32(&m->slot->wait.park, VR_PARK_PARKED);
	vr_seq_end(h);
	vr_group_unlock(m);
	for (uint32_t d = 0; d < ndev; d++)
		if (out[d])
			vr_reg_give(m, (int)d, out[d]);
	vr_wake_waiters(h);
	return 0;
}

void vr_park_back(vr_member *m, int dev)
{
	if (!m || dev < 0 || (uint32_t)dev >= vr_hdr_ndev(m->hdr) || lock_books(m) <= 0)
		return;
	vr_seq_begin(m->hdr);
	STORE64(&line_of(m, (uint32_t)dev)->parked, 0);
	vr_seq_end(m->hdr);
	vr_group_unlock(m);
}

void vr_park_end(vr_member *m, uint64_t host_bytes)
{
	if (!m || lock_books(m) <= 0)
		return;
	struct vr_hdr *h = m->hdr;
	vr_seq_begin(h);
	uint32_t ndev = vr_hdr_ndev(h);
	for (uint32_t d = 0; d < ndev; d++)
		STORE64(&line_of(m, d)->parked, 0);
	STORE32(&m->slot->wait.park, VR_PARK_NONE);
	STORE64(&m->slot->wait.parked_since, 0);
	h->wait.parked -= host_bytes < h->wait.parked ? host_bytes : h->wait.parked;
	vr_seq_end(h);
	vr_group_unlock(m);
}

int vr_park_in(vr_member *m, int dev, uint64_t bytes)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	/* The books, never a thread's lane: the lanes' spare left with the
	 * rest and comes back with it. */
	return vr_reg_take(m, dev, bytes, bytes, NULL, VR_TAKE_TRY);
}

uint64_t vr_park_budget(const vr_member *m)
{
	return m ? m->hdr->wait.park_budget : 0;
}
