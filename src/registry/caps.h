/*
 * caps.h - changing a running group's caps (`vramctl limit`): caps.c.
 */
#ifndef VRAMCTL_REGISTRY_CAPS_H
#define VRAMCTL_REGISTRY_CAPS_H

#include <stddef.h>
#include <stdint.h>

#include "registry/layout.h"
#include "registry/registry.h"
#include "vramctl/registry.h"

/* The longest spec text a group keeps, its NUL included (layout.h). */
#define VR_GROUP_SPEC_MAX 128

/* One device's new cap; old is filled in (UINT64_MAX: uncapped), added
 * when the group had not used the device yet (it starts with this cap). */
struct vr_cap_new {
	unsigned char uuid[VR_UUID_LEN];
	uint64_t cap;
	uint64_t old;
	int added;
};

/*
 * Sets each named device's cap in the group's books, m being a member
 * (`vramctl limit` joins as a launcher, vr_join_opts.existing). Under the
 * lock, with the books frozen (no operation in flight on the old cap):
 * each device's cap and its check word are written together and the
 * change recorded (who, when, old, new: layout.h, struct vr_changes); the
 * group's spec text becomes spec (NULL: kept). Every member takes the new
 * cap at its next operation (books.c, FAST_RELEARN); nothing held is
 * freed: a group above its new cap is refused until it is under it.
 * Returns how many caps changed, or a negative errno with one line in err:
 * -EBADMSG (the books are damaged), -ETIMEDOUT (a live member kept the
 * lock), -ENOSPC (no room for a new device).
 */
int vr_caps_set(vr_member *m, struct vr_cap_new *caps, int n, const char *spec, char *err,
                size_t errlen);

/* The group's devices, in the books' order (at most n): UUID, cap and
 * the group's in-use (its total, lanes' spare included). Returns how many. */
int vr_caps_devices(vr_member *m, unsigned char (*uuids)[VR_UUID_LEN], uint64_t *caps,
                    uint64_t *in_use, int n);

/* How many cap changes the group has had since it started (0: none), and
 * its spec text now into spec (read under the lock). -errno on error;
 * -EBADMSG when the count was overwritten (it fails its check). */
int64_t vr_caps_changed(vr_member *m, char *spec, size_t len);

/* One recorded cap change (layout.h, struct vr_change) as every reader
 * of the books has it: the snapshot's (reader.c) and a member's history
 * (vr_caps_history) alike. */
void vr_change_public(const struct vr_change *c, struct vramctl_cap_change *out);

/* The group's changes numbered from on (0: the first since the group
 * started; vr_caps_changed's count before a run: the run's), oldest first,
 * at most n into out, read under the lock; *total gets how many the group
 * has had. Only the last VR_CAP_CHANGES_KEPT are kept: older ones are
 * skipped (the caller sees total - from > the count returned). Returns how
 * many were copied (0 for damaged books: *total 0), or -errno with out and
 * *total untouched (-EBADMSG: the record of changes was overwritten). */
#define VR_CAP_CHANGES_KEPT 16
int vr_caps_history(vr_member *m, uint64_t from, struct vramctl_cap_change *out, int n,
                    uint64_t *total);

#endif /* VRAMCTL_REGISTRY_CAPS_H */
