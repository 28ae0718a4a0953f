/*
 * cap_change.c - a cap change as JSON (cap_change.h).
 */
#include "common/cap_change.h"

#include <stdlib.h>

void vr_cap_change_json(struct jw *w, const struct vramctl_cap_change *c, int gpu_index)
{
	jw_open(w, NULL, '{');
	jw_u64(w, "time", c->when, 1);
	jw_int(w, "uid", c->uid, 1);
	jw_int(w, "pid", c->pid, 1);
	jw_str(w, "uuid", c->uuid);
	jw_int(w, "gpu_index", gpu_index, gpu_index >= 0);
	jw_u64(w, "old_cap_bytes", c->old_cap, c->old_cap != UINT64_MAX);
	jw_u64(w, "new_cap_bytes", c->new_cap, 1);
	jw_close(w, '}');
}

char *vr_cap_changes_text(const struct vramctl_cap_change *c, const int *gpu_index, int n)
{
	struct jw w = {.compact = 1};
	jw_open(&w, NULL, '[');
	for (int k = 0; k < n; k++)
		vr_cap_change_json(&w, &c[k], gpu_index[k]);
	jw_close(&w, ']');
	jb_putc(&w, '\0');
	if (w.oom) {
		free(w.b);
		return NULL;
	}
	return w.b;
}
