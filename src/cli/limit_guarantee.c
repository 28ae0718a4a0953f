/*
 * limit_guarantee.c - `vramctl limit` and the group's guarantees
 * (limit_guarantee.h). The group's entry in each device's book holds its
 * guarantee (registry/devbook.h); its members read it at every borrow and
 * memory question, so a change here holds at once. A raise is admitted
 * as a new guarantee is (what processes outside the book hold: NVML's
 * figures, as `vramctl run --guarantee` counts them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/admit.h"
#include "cli/limit_guarantee.h"
#include "common/size.h"
#include "monitor/model.h"
#include "monitor/nvml.h"
#include "registry/devbook.h"

static const struct vr_launch_dev *visible(const struct vr_launch_dev *devs, int ndev,
                                           const unsigned char *uuid)
{
	for (int i = 0; i < ndev; i++)
		if (!memcmp(devs[i].raw, uuid, VR_UUID_LEN))
			return &devs[i];
	return NULL;
}

/* The group's live guarantee on the device (its owner's, its books' key):
 * 1 with *g and the book's capacity, 0 when it holds none there. */
static int held_guarantee(const unsigned char *uuid, uint32_t uid, uint64_t key, uint64_t *g,
                          uint64_t *capacity)
{
	struct vr_devbook_view *v = malloc(sizeof *v);
	int found = 0;
	if (v && vr_devbook_read(NULL, uuid, v) == 0)
		for (int e = 0; e < v->n && !found; e++)
			if (v->e[e].live && v->e[e].uid == uid && v->e[e].group_key == key) {
				*g = v->e[e].guarantee;
				*capacity = v->capacity;
				found = 1;
			}
	free(v);
	return found;
}

/* Sets the guarantee on one device's book. 0, or -1 with err. */
static int set_one(const struct cli_regrant *r, const unsigned char *uuid, uint64_t capacity,
                   uint64_t g, const struct mon_model *m, char *err, size_t errlen)
{
	struct vr_devbook *b = NULL;
	char text[48];
	vr_format_uuid(uuid, text, sizeof text);
	int rc = vr_devbook_open(NULL, uuid, capacity, &b, err, errlen);
	if (rc != 0)
		return -1;
	int n = -1;
	struct vr_devbook_proc *procs = m ? cli_admit_procs(m, text, &n) : NULL;
	struct vr_devbook_who who = {.group = r->group,
	                             .group_key = r->key,
	                             .uid = r->uid,
	                             .pid = (int32_t)getpid(),
	                             .guarantee = g,
	                             .procs = procs,
	                             .nprocs = n < 0 ? 0 : n};
	uint64_t old;
	rc = vr_devbook_regrant(b, &who, &old, err, errlen);
	free(procs);
	vr_devbook_close(b);
	return rc == 0 ? 0 : -1;
}

void cli_regrant_undo(const struct cli_regrant *r)
{
	char err[512];
	for (int i = 0; i < r->n; i++)
		if (set_one(r, r->d[i].uuid, r->d[i].capacity, r->d[i].old, NULL, err,
		            sizeof err) != 0)
			fprintf(stderr, "vramctl: limit: the guarantee could not be set back: %s\n",
			        err);
}

int cli_regrant(const char *group, vr_member *m, uint32_t uid, const struct vr_cap_new *caps, int n,
                const struct vr_limits *gua, const struct vr_launch_dev *devs, int ndev,
                struct cli_regrant *out)
{
	struct mon_model model;
	struct mon_nvml *nv = NULL;
	char err[512], text[48];
	int have_model = 0, rc = 0;
	memset(out, 0, sizeof *out);
	out->group = group;
	out->key = vr_group_key(m);
	out->uid = uid;
	for (int i = 0; i < n && rc == 0; i++) {
		const struct vr_launch_dev *dv = visible(devs, ndev, caps[i].uuid);
		uint64_t old = 0, g = 0, capacity = 0;
		int has = held_guarantee(caps[i].uuid, uid, out->key, &old, &capacity);
		vr_format_uuid(caps[i].uuid, text, sizeof text);
		int asked = gua && vr_limits_cap_for(gua, dv ? dv->index : -1, text,
		                                     dv ? dv->total : 0, &g);
		if (!asked)
			g = old;
		if (asked && !has && g) {
			fprintf(stderr,
			        "vramctl: limit: group %s holds no guarantee on %s: a guarantee is "
			        "given as the group starts (vramctl run --guarantee); nothing "
			        "changed\n",
			        group, text);
			rc = -1;
			break;
		}
		int with_cap = g > caps[i].cap;
		if (with_cap)
			g = caps[i].cap;
		if (!has || g == old)
			continue;
		if (g > old && !have_model) {
			/* What processes outside vramctl hold counts in admission. */
			memset(&model, 0, sizeof model);
			have_model = mon_nvml_open(NULL, &nv, err, sizeof err) == 0 &&
			             mon_nvml_read(nv, &model) == 0;
		}
		if (set_one(out, caps[i].uuid, capacity, g, have_model ? &model : NULL, err,
		            sizeof err) != 0) {
			fprintf(stderr, "vramctl: limit: group %s: %s: %s; nothing changed\n",
			        group, text, err);
			rc = -1;
			break;
		}
		memcpy(out->d[out->n].uuid, caps[i].uuid, VR_UUID_LEN);
		out->d[out->n].old = old;
		out->d[out->n].now = g;
		out->d[out->n].with_cap = with_cap;
		out->d[out->n].capacity = capacity;
		out->n++;
	}
	if (have_model)
		mon_model_clear(&model);
	if (nv)
		mon_nvml_close(nv);
	if (rc != 0) {
		cli_regrant_undo(out);
		out->n = 0;
	}
	return rc;
}

void cli_regrant_say(const struct cli_regrant *r)
{
	char text[48], a[32], b[32];
	for (int i = 0; i < r->n; i++) {
		vr_format_uuid(r->d[i].uuid, text, sizeof text);
		int dg = vr_size_digits((uint64_t[]){r->d[i].old, r->d[i].now}, 2, 0);
		printf("group %s: %s: guarantee %s -> %s%s\n", r->group, text,
		       vr_format_size_digits(r->d[i].old, dg, a, sizeof a),
		       vr_format_size_digits(r->d[i].now, dg, b, sizeof b),
		       r->d[i].with_cap ? " (lowered with the cap: a guarantee above the cap holds "
		                          "memory from every other group that this one cannot use)"
		                        : "");
	}
}
