/*
 * books.c - the books every allocation goes through: devices, reserve,
 * release, usage, and the numbers shown apart. Each call takes the group's
 * lock for a few loads and stores.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "registry/member.h"

/* ---- the books */

int vr_device(vr_member *m, const unsigned char uuid[VR_UUID_LEN], uint64_t cap_if_new,
              uint64_t *cap)
{
	if (!m || !uuid)
		return -EINVAL;
	struct vr_region_hdr *h = m->hdr;
	int rc = vr_region_lock(m);
	if (rc < 0)
		return rc;
	int idx = -ENOSPC;
	for (uint32_t d = 0; d < h->ndev; d++) {
		if (memcmp(h->dev[d].uuid, uuid, VR_UUID_LEN) == 0) {
			idx = (int)d;
			break;
		}
	}
	if (idx < 0 && h->ndev < VR_MAX_DEVICES) {
		books_begin(h);
		uint32_t d = h->ndev;
		memset(&h->dev[d], 0, sizeof(h->dev[d]));
		memcpy(h->dev[d].uuid, uuid, VR_UUID_LEN);
		h->dev[d].cap = cap_if_new;
		h->ndev = d + 1;
		books_end(h);
		idx = (int)d;
	}
	if (idx >= 0 && cap)
		*cap = h->dev[idx].cap;
	vr_region_unlock(m);
	return idx;
}

/* Mutex held. Our slot may have been reclaimed if our liveness lock was
 * lost (someone closed our fd): then we must not write into it. */
static inline int slot_ours(const vr_member *m)
{
	return m->slot->incarnation == m->incarnation;
}

static int try_reserve_locked(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	struct vr_region_hdr *h = m->hdr;
	struct vr_region_dev *g = &h->dev[dev];
	uint64_t cur = g->in_use;
	if (bytes > g->cap || cur > g->cap - bytes) {
		if (in_use)
			*in_use = cur;
		return -ENOSPC;
	}
	struct vramctl_counts *s = &m->slot->dev[dev];
	books_begin(h);
	g->in_use = cur + bytes;
	if (g->peak < cur + bytes)
		g->peak = cur + bytes;
	s->in_use += bytes;
	if (s->peak < s->in_use)
		s->peak = s->in_use;
	books_end(h);
	return 0;
}

int vr_reserve(vr_member *m, int dev, uint64_t bytes, uint64_t *in_use)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return -EINVAL;
	int rc = vr_region_lock(m);
	if (VR_UNLIKELY(rc < 0))
		return rc;
	if (VR_UNLIKELY((uint32_t)dev >= m->hdr->ndev || !slot_ours(m))) {
		vr_region_unlock(m);
		return (uint32_t)dev >= m->hdr->ndev ? -EINVAL : -ESTALE;
	}
	rc = try_reserve_locked(m, dev, bytes, in_use);
	vr_region_unlock(m);
	if (VR_LIKELY(rc == 0))
		return 0;

	/* Before anyone is denied, give back what dead members held, then try
	 * once more (live members may also have freed some meanwhile). */
	vr_reclaim_dead(m);
	rc = vr_region_lock(m);
	if (rc < 0)
		return rc;
	if (!slot_ours(m)) {
		vr_region_unlock(m);
		return -ESTALE;
	}
	rc = try_reserve_locked(m, dev, bytes, in_use);
	if (rc == 0) {
		vr_region_unlock(m);
		return 0;
	}
	struct vr_region_hdr *h = m->hdr;
	books_begin(h);
	m->slot->dev[dev].denied_count++;
	m->slot->dev[dev].last_denied = bytes;
	if (in_use)
		*in_use = h->dev[dev].in_use;
	books_end(h);
	vr_region_unlock(m);
	return -ENOSPC;
}

void vr_release(vr_member *m, int dev, uint64_t bytes)
{
	if (VR_UNLIKELY(!m || dev < 0 || dev >= VR_MAX_DEVICES))
		return;
	if (VR_UNLIKELY(vr_region_lock(m) < 0))
		return;
	struct vr_region_hdr *h = m->hdr;
	if (VR_LIKELY((uint32_t)dev < h->ndev && slot_ours(m))) {
		struct vramctl_counts *s = &m->slot->dev[dev];
		uint64_t b = bytes < s->in_use ? bytes : s->in_use;
		books_begin(h);
		s->in_use -= b;
		h->dev[dev].in_use -= b < h->dev[dev].in_use ? b : h->dev[dev].in_use;
		books_end(h);
	}
	vr_region_unlock(m);
}

void vr_usage(vr_member *m, int dev, uint64_t *in_use, uint64_t *cap)
{
	uint64_t u = 0, c = UINT64_MAX;
	if (m && dev >= 0 && dev < VR_MAX_DEVICES && vr_region_lock(m) == 0) {
		if ((uint32_t)dev < m->hdr->ndev) {
			u = m->hdr->dev[dev].in_use;
			c = m->hdr->dev[dev].cap;
		}
		vr_region_unlock(m);
	}
	if (in_use)
		*in_use = u;
	if (cap)
		*cap = c;
}

static void add_clamped(uint64_t *v, int64_t delta)
{
	if (delta >= 0)
		*v += (uint64_t)delta;
	else
		*v -= (uint64_t)(-(delta + 1)) + 1 < *v ? (uint64_t)(-(delta + 1)) + 1 : *v;
}

void vr_note_pinned(vr_member *m, int64_t delta)
{
	if (!m || vr_region_lock(m) < 0)
		return;
	if (slot_ours(m)) {
		books_begin(m->hdr);
		add_clamped(&m->slot->host_pinned, delta);
		books_end(m->hdr);
	}
	vr_region_unlock(m);
}

void vr_note_spilled(vr_member *m, int dev, int64_t delta)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || vr_region_lock(m) < 0)
		return;
	if ((uint32_t)dev < m->hdr->ndev && slot_ours(m)) {
		books_begin(m->hdr);
		add_clamped(&m->slot->dev[dev].spilled, delta);
		books_end(m->hdr);
	}
	vr_region_unlock(m);
}

int vr_sample(vr_member *m, int dev, struct vr_books_sample *out)
{
	if (!m || !out || dev < 0 || dev >= VR_MAX_DEVICES)
		return -EINVAL;
	int rc = vr_region_lock(m);
	if (rc < 0)
		return rc;
	struct vr_region_hdr *h = m->hdr;
	memset(out, 0, sizeof(*out));
	if ((uint32_t)dev >= h->ndev) {
		vr_region_unlock(m);
		return -EINVAL;
	}
	out->cap = h->dev[dev].cap;
	out->in_use = h->dev[dev].in_use;
	out->peak = h->dev[dev].peak;
	for (uint32_t i = 0; i < h->slots_hw; i++) {
		struct vr_slot *s = vr_region_slot(h, i);
		if (s->state == VR_SLOT_USED) {
			out->slots_sum += s->dev[dev].in_use;
			out->used_slots++;
		}
	}
	vr_region_unlock(m);
	return 0;
}

uint64_t vr_max_lock_wait_ns(const vr_member *m)
{
	return m ? atomic_load(&((vr_member *)m)->max_wait_ns) : 0;
}

int vr_slot_index(const vr_member *m)
{
	return m ? (int)m->slot_idx : -1;
}
