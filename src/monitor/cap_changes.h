/*
 * cap_changes.h - the views of caps changed while groups run (`vramctl
 * limit`): each group's recorded changes, in the table and JSON
 * (cap_changes.c; the JSON object is common/cap_change.c's). Pure, as
 * format.c.
 */
#ifndef VRAMCTL_MONITOR_CAP_CHANGES_H
#define VRAMCTL_MONITOR_CAP_CHANGES_H

#include <stdio.h>

#include "common/json.h"
#include "monitor/model.h"

/* After the join: each group device whose last change lowered its cap to
 * the cap in force gets lowered_from/at/by (for the over-cap reason). */
void mon_cap_changes_lowered(struct mon_group *g);
/* The table's lines: one per group whose cap changed, its last change. */
void mon_cap_changes_table(FILE *f, const struct mon_model *m);
/* A group's "cap_changes" array (oldest first). */
void mon_cap_changes_json(struct jw *w, const struct mon_model *m, const struct mon_group *g);

#endif /* VRAMCTL_MONITOR_CAP_CHANGES_H */
