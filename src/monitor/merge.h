/*
 * merge.h - the registry half of the monitor's model, joined with the NVML
 * half (merge.c); collect.c calls it after taking the snapshot, and
 * tests/monitor/test_merge on fixed snapshots.
 */
#ifndef VRAMCTL_MONITOR_MERGE_H
#define VRAMCTL_MONITOR_MERGE_H

#include "monitor/model.h"
#include "vramctl/registry.h"

/*
 * The registry half: merges snapshot s (NULL: none) into m, which holds the
 * NVML half. snap_rc is what vramctl_snapshot_take returned (for the note).
 * Sets MON_M_REGISTRY, groups, capped rows, per-device caps and the on-card
 * figures (mon_card_figures); sorts the rows.
 */
int mon_merge_registry(struct mon_model *m, const struct vramctl_snapshot *s, int snap_rc,
                       const char *proc_root);

#endif /* VRAMCTL_MONITOR_MERGE_H */
