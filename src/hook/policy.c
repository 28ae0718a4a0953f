/*
 * policy.c - the one place that decides whether an allocation fits, and
 * what the program is told about memory.
 *
 *   cap of a device: VRAMCTL_LIMIT read for the program's ordinal or UUID
 *     (a malformed limit fails closed: cap 0); the group's cap wins when the
 *     group already has one for that device (books.c);
 *   reserve: before the driver is called, against the cap in force; a
 *     request that does not fit is refused and said (rate limited);
 *   view: total = min(cap, physical total), free = min(cap - group in-use,
 *     physical free), so every framework sizes itself inside the cap.
 */
#include "hook/policy.h"
#include "hook/books.h"

void vr_policy_device(struct vr_dev *d)
{
	uint64_t cap = UINT64_MAX;
	if (vr_g.limit_bad)
		cap = 0;
	else if (!vr_limits_cap_for(&vr_g.limits, d->ordinal, d->uuid_text, d->phys_total, &cap))
		cap = UINT64_MAX;
	vr_books_device(d, cap);
	d->capped = d->cap != UINT64_MAX;
	if (d->capped && d->cap != cap && cap != UINT64_MAX)
		vr_log(VR_LOG_INFO, "GPU %d: the group's cap is in force", d->ordinal);
}

static int reserve(struct vr_dev *d, uint64_t bytes, int report)
{
	uint64_t in_use = 0;
	if (VR_UNLIKELY(!d)) /* no device known: nothing to hold it against */
		return 0;
	if (VR_LIKELY(vr_books_reserve(d, bytes, &in_use) == 0))
		return 0;
	if (report)
		vr_log_denied(d->ordinal, bytes, d->cap, in_use);
	return -1;
}

int vr_policy_reserve(struct vr_dev *d, uint64_t bytes)
{
	return reserve(d, bytes, 1);
}

int vr_policy_try(struct vr_dev *d, uint64_t bytes)
{
	return reserve(d, bytes, 0);
}

void vr_policy_release(struct vr_dev *d, uint64_t bytes)
{
	if (VR_LIKELY(d != NULL))
		vr_books_release(d, bytes);
}

void vr_policy_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp)
{
	uint64_t used = vr_books_in_use(d);
	uint64_t room = used < d->cap ? d->cap - used : 0;
	if (*totalp > d->cap)
		*totalp = d->cap;
	if (*freep > room)
		*freep = room;
	if (*freep > *totalp)
		*freep = *totalp;
}

uint64_t vr_policy_total(const struct vr_dev *d, uint64_t total)
{
	return d->capped && total > d->cap ? d->cap : total;
}
