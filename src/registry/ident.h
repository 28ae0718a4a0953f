/*
 * ident.h - who a member is beyond its slot, recorded once at its join
 * (layout.h, struct vr_ident): its cgroups and cgroup namespace as it saw
 * them, and the names its environment gives it, so that a monitor need not
 * open /proc/PID/cgroup and /proc/PID/environ for every member at every
 * look. The names are the process's own claim, as its environment is; the
 * cgroups are checked by the monitor against the kernel (identity.c).
 */
#ifndef VRAMCTL_REGISTRY_IDENT_H
#define VRAMCTL_REGISTRY_IDENT_H

#include <stdint.h>

#include "registry/layout.h"

/* This process's record, read before the join takes the group's lock
 * (/proc/self/cgroup, /proc/self/ns/cgroup, the environment): fields that
 * cannot be read, or do not fit, are left "" (0 for the namespace). */
void vr_ident_read(struct vr_ident *out);

/* Writes id as slot i's record, for its member (pid, start_time). The
 * group's lock held, before the slot is marked used. */
void vr_ident_put(struct vr_hdr *h, uint32_t i, const struct vr_ident *id, int32_t pid,
                  uint64_t start_time);

/* Copies slot i's record into out when it is the record of the member
 * (pid, start_time) and was not being written: 1, else 0 (a slot taken by
 * a member of an older build, or by another member meanwhile). The fields
 * are terminated. */
int vr_ident_get(const struct vr_hdr *h, uint32_t i, int32_t pid, uint64_t start_time,
                 struct vr_ident *out);

#endif /* VRAMCTL_REGISTRY_IDENT_H */
