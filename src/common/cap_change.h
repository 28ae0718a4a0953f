/*
 * cap_change.h - a cap changed while its group ran (`vramctl limit`) as
 * JSON: the one writer of the object that status --json (a group's
 * "cap_changes") and run --report=FILE.json (the run's) both hold, so the
 * two documents never name or write its fields apart.
 */
#ifndef VRAMCTL_COMMON_CAP_CHANGE_H
#define VRAMCTL_COMMON_CAP_CHANGE_H

#include "common/json.h"
#include "vramctl/registry.h"

/* One change as an object (an array's item: no key): time, uid, pid, uuid,
 * gpu_index (null where gpu_index < 0: the writer knows no index for the
 * device), old_cap_bytes (null: none before) and new_cap_bytes. */
void vr_cap_change_json(struct jw *w, const struct vramctl_cap_change *c, int gpu_index);

/* n changes as a JSON array, a NUL-terminated text the caller frees (for
 * a program that builds its document with json-c); gpu_index[k] is change
 * k's. NULL when memory ran out. */
char *vr_cap_changes_text(const struct vramctl_cap_change *c, const int *gpu_index, int n);

#endif /* VRAMCTL_COMMON_CAP_CHANGE_H */
