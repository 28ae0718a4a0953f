/*
 * caps.c - changing a running group's caps (caps.h).
 *
 * A cap lives in the header next to a check word keyed by the cap and the
 * device's UUID (member.h); the total's own check is keyed by the UUID
 * alone. So a cap is changed by writing the cap and its check together,
 * under the lock, while the totals are frozen: an operation in flight
 * finishes on the old cap before the freeze ends, every later one finds
 * the cap moved (books.c, fast_check), learns it under the lock and runs
 * again. A cap written without its check stays damage, as before.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/size.h"
#include "registry/caps.h"
#include "registry/damage.h"
#include "registry/lock.h"
#include "registry/member.h"
#include "registry/proc.h"
#include "registry/util.h"

_Static_assert(VR_GROUP_SPEC_MAX == VR_SPEC_MAX, "caps.h says the header's spec size");
_Static_assert(VR_CAP_CHANGES_KEPT == VR_CHANGES, "caps.h says how many changes are kept");

/* Records one change made by uid. Lock held, seqlock open. */
static void record(struct vr_hdr *h, const struct vr_cap_new *c, uint64_t cap, uint32_t uid)
{
	struct vr_changes *ch = vr_changes_at(h);
	uint64_t k = ch->count;
	struct vr_change *r = &ch->c[k % VR_CHANGES];
	r->when = (uint64_t)time(NULL);
	r->uid = uid;
	r->pid = (int32_t)getpid();
	memcpy(r->uuid, c->uuid, VR_UUID_LEN);
	r->old_cap = c->old;
	r->new_cap = cap;
	STORE64(&r->check, vr_change_check(r, k));
	STORE64(&ch->count, k + 1);
	STORE64(&ch->count_check, vr_changes_count_check(k + 1));
}

/* Sets device d's cap and its check word. Lock held, books frozen. */
static void set_cap(struct vr_hdr_dev *g, uint64_t cap)
{
	STORE64(&g->cap, cap);
	STORE64(&g->check, vr_dev_check_of(cap, g->uuid));
}

static int find(const struct vr_hdr *h, const unsigned char *uuid)
{
	for (uint32_t d = 0; d < vr_hdr_ndev(h); d++)
		if (memcmp(h->dev[d].uuid, uuid, VR_UUID_LEN) == 0)
			return (int)d;
	return -1;
}

int vr_caps_devices(vr_member *m, unsigned char (*uuids)[VR_UUID_LEN], uint64_t *caps,
                    uint64_t *in_use, int n)
{
	if (!m || n < 0)
		return -EINVAL;
	uint32_t ndev = vr_hdr_ndev(m->hdr);
	int k = 0;
	for (uint32_t d = 0; d < ndev && k < n; d++, k++) {
		const struct vr_hdr_dev *g = &m->hdr->dev[d];
		memcpy(uuids[k], g->uuid, VR_UUID_LEN);
		caps[k] = vr_dev_cap(g);
		in_use[k] = vr_dev_total(g);
	}
	return k;
}

int64_t vr_caps_changed(vr_member *m, char *spec, size_t len)
{
	if (!m || !spec || !len)
		return -EINVAL;
	spec[0] = '\0';
	if (vr_is_detached(m))
		return 0; /* its own books: the caps it joined with */
	uint64_t call = vr_call_begin();
	int rc = vr_group_lock(m);
	vr_call_end(call);
	if (rc != 0)
		return rc;
	const struct vr_changes *ch = vr_changes_at(m->hdr);
	uint64_t n = ch->count;
	int whole = ch->count_check == vr_changes_count_check(n);
	if (whole)
		snprintf(spec, len, "%.*s", (int)sizeof(m->hdr->limit_spec) - 1,
		         m->hdr->limit_spec);
	vr_group_unlock(m);
	if (!whole)
		return -EBADMSG; /* an overwritten count: no change is known */
	return (int64_t)(n > INT64_MAX ? INT64_MAX : n);
}

void vr_change_public(const struct vr_change *c, struct vramctl_cap_change *out)
{
	*out = (struct vramctl_cap_change){.when = c->when,
	                                   .uid = c->uid,
	                                   .pid = c->pid,
	                                   .old_cap = c->old_cap,
	                                   .new_cap = c->new_cap};
	vr_format_uuid(c->uuid, out->uuid, sizeof(out->uuid));
}

int vr_caps_history(vr_member *m, uint64_t from, struct vramctl_cap_change *out, int n,
                    uint64_t *total)
{
	if (!m || !total || n < 0 || (!out && n))
		return -EINVAL;
	if (vr_is_detached(m)) {
		*total = 0; /* its own books: no change reached them */
		return 0;
	}
	uint64_t call = vr_call_begin();
	int rc = vr_group_lock(m);
	vr_call_end(call);
	if (rc != 0)
		return rc;
	const struct vr_changes *ch = vr_changes_at(m->hdr);
	if (!vr_changes_whole(ch)) {
		vr_group_unlock(m);
		return -EBADMSG; /* overwritten: no change is shown as made */
	}
	uint64_t count = ch->count, k = vr_changes_first(count, from);
	int got = 0;
	for (; k < count && got < n; k++, got++) {
		vr_change_public(&ch->c[k % VR_CHANGES], &out[got]);
	}
	vr_group_unlock(m);
	*total = count;
	return got;
}

int vr_caps_set(vr_member *m, struct vr_cap_new *caps, int n, const char *spec, char *err,
                size_t errlen)
{
	if (!m || (!caps && n) || n < 0)
		return -EINVAL;
	/* Devices the group has not used yet are added with their new cap
	 * (vr_device: over zeros, under the lock); an uncapped one (-EPERM
	 * there) gets its cap below. */
	for (int i = 0; i < n; i++) {
		caps[i].added = 0;
		caps[i].old = UINT64_MAX;
		if (find(m->hdr, caps[i].uuid) >= 0 || vr_is_detached(m))
			continue;
		uint64_t cur = 0;
		int idx = vr_device(m, caps[i].uuid, caps[i].cap, &cur);
		if (idx >= 0 && cur == caps[i].cap)
			caps[i].added = 1;
	}
	if (vr_is_detached(m)) {
		vr_seterr(err, errlen, "the group's books are damaged: %s", vr_damaged(m));
		return -EBADMSG;
	}
	uint32_t uid = (uint32_t)vr_proc_outer_uid(); /* read before the lock */
	uint64_t call = vr_call_begin();
	int rc = vr_group_lock(m);
	if (rc == 0 && (rc = vr_reg_freeze(m, NULL)) != 0)
		vr_group_unlock(m);
	vr_call_end(call);
	if (rc != 0) {
		vr_seterr(err, errlen, "%s%s%s",
		          rc == -EBADMSG ? "the group's books are damaged (a total fails its check)"
		          : rc == -EUCLEAN ? "the group's books are damaged ("
		                           : "a live member of the group kept its lock",
		          rc == -EUCLEAN ? vr__phantom : "", rc == -EUCLEAN ? ")" : "");
		return rc == -EBADMSG || rc == -EUCLEAN ? -EBADMSG : -ETIMEDOUT;
	}
	struct vr_hdr *h = m->hdr;
	int changed = 0;
	rc = 0;
	if (!vr_changes_whole(vr_changes_at(h))) {
		/* Its record of changes was overwritten: said, not added to. */
		vr_seterr(err, errlen,
		          "the group's books are damaged (its record of cap changes was "
		          "overwritten)");
		vr_reg_thaw(m, 0);
		vr_group_unlock(m);
		return -EBADMSG;
	}
	vr_seq_begin(h);
	for (int i = 0; i < n && rc == 0; i++) {
		int d = find(h, caps[i].uuid);
		if (d < 0) {
			vr_seterr(err, errlen, "no room for another device in the group");
			rc = -ENOSPC;
			break;
		}
		struct vr_hdr_dev *g = &h->dev[d];
		if (!vr_dev_ok(g)) {
			vr_seterr(err, errlen,
			          "the group's books are damaged (a device's cap or "
			          "total was overwritten)");
			rc = -EBADMSG;
			break;
		}
		if (caps[i].added)
			continue; /* added with it just now */
		caps[i].old = g->cap;
		if (g->cap == caps[i].cap)
			continue;
		set_cap(g, caps[i].cap);
		record(h, &caps[i], caps[i].cap, uid);
		changed++;
	}
	for (int i = 0; i < n && rc == 0; i++)
		if (caps[i].added) {
			record(h, &caps[i], caps[i].cap, uid);
			changed++;
		}
	if (rc == 0 && spec)
		snprintf(h->limit_spec, sizeof(h->limit_spec), "%s", spec);
	vr_seq_end(h);
	vr_reg_thaw(m, 0);
	vr_group_unlock(m);
	vr_wake_waiters(h); /* a cap raised makes room */
	return rc < 0 ? rc : changed;
}
