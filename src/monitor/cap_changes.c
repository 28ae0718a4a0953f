/*
 * cap_changes.c - the views of caps changed while groups run (cap_changes.h).
 */
#include <string.h>

#include "common/cap_change.h"
#include "common/size.h"
#include "common/text.h"
#include "monitor/cap_changes.h"

void mon_cap_changes_lowered(struct mon_group *g)
{
	for (int j = 0; j < g->ndev; j++) {
		struct mon_group_dev *gd = &g->dev[j];
		gd->lowered_from = 0;
		for (int k = g->nchanges - 1; k >= 0; k--) {
			const struct vramctl_cap_change *c = &g->changes[k];
			if (strcmp(c->uuid, gd->uuid) != 0)
				continue;
			if (c->new_cap == gd->cap && c->old_cap != UINT64_MAX &&
			    c->old_cap > c->new_cap) {
				gd->lowered_from = c->old_cap;
				gd->lowered_at = c->when;
				gd->lowered_by = c->uid;
			}
			break; /* the last change of this device */
		}
	}
}

/* The GPU index of a change's device, or -1 when the monitor has none. */
static int change_index(const struct mon_model *m, const struct mon_group *g,
                        const struct vramctl_cap_change *c)
{
	for (int j = 0; j < g->ndev; j++)
		if (!strcmp(g->dev[j].uuid, c->uuid))
			return mon_model_gpu_index(m, g->dev[j].device, 1);
	return -1;
}

/* "GPU n" of a change's device, or its UUID when the monitor has no index. */
static const char *change_gpu(const struct mon_model *m, const struct mon_group *g,
                              const struct vramctl_cap_change *c, char *buf, size_t len)
{
	int idx = change_index(m, g, c);
	if (idx >= 0)
		snprintf(buf, len, "GPU %d", idx);
	else
		snprintf(buf, len, "%s", c->uuid);
	return buf;
}

void mon_cap_changes_table(FILE *f, const struct mon_model *m)
{
	int first = 1;
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		if (!g->nchanges)
			continue;
		const struct vramctl_cap_change *c = &g->changes[g->nchanges - 1];
		char name[4 * VR_GROUP_NAME_MAX + 8], gpu[64], a[32], b[32], when[32];
		fprintf(
		    f,
		    "%sgroup %s: cap changed %llu time%s while it ran (vramctl limit); last: %s "
		    "%s -> %s, by uid %u at %s\n",
		    first ? "\n" : "", vr_text_escape(name, sizeof name, g->name),
		    (unsigned long long)g->changes_total, g->changes_total == 1 ? "" : "s",
		    change_gpu(m, g, c, gpu, sizeof gpu),
		    c->old_cap == UINT64_MAX ? "none" : vr_format_size(c->old_cap, a, sizeof a),
		    vr_format_size(c->new_cap, b, sizeof b), (unsigned)c->uid,
		    vr_format_utc(c->when, when, sizeof when));
		first = 0;
	}
}

void mon_cap_changes_json(struct jw *w, const struct mon_model *m, const struct mon_group *g)
{
	jw_u64(w, "cap_changes_total", g->changes_total, 1);
	jw_open(w, "cap_changes", '[');
	for (int k = 0; k < g->nchanges; k++)
		vr_cap_change_json(w, &g->changes[k], change_index(m, g, &g->changes[k]));
	jw_close(w, ']');
}
