/*
 * limit_guarantee.c - `vramctl limit` and the group's guarantees
 * (limit_guarantee.h). The group's entry in each device's book holds its
 * guarantee (registry/devbook.h); its members read it at every borrow and
 * memory question (vr_devbook_own), so a change here holds at once. The
 * book is root's: root changes it itself (vr_devbook_regrant, which admits
 * a raise as a new guarantee is admitted), a group's owner asks the guard
 * service, which changes only its caller's user's entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/admit.h"
#include "cli/limit_guarantee.h"
#include "common/size.h"
#include "common/text.h"
#include "registry/devbook.h"
#include "registry/devguard.h"

static const struct vr_launch_dev *visible(const struct vr_launch_dev *devs, int ndev,
                                           const unsigned char *uuid)
{
	for (int i = 0; i < ndev; i++)
		if (!memcmp(devs[i].raw, uuid, VR_UUID_LEN))
			return &devs[i];
	return NULL;
}

/* The group's live guarantee on the device (its owner's, its name in the
 * book): 1 with *g, 0 when it holds none there. */
static int held_guarantee(const unsigned char *uuid, const char *group, uint32_t uid, uint64_t *g)
{
	struct vr_devbook_view *v = malloc(sizeof *v);
	int found = 0;
	if (v && vr_devbook_read(NULL, uuid, v) == 0)
		for (int e = 0; e < v->n && !found; e++)
			if (v->e[e].live && v->e[e].uid == uid && !strcmp(v->e[e].group, group)) {
				*g = v->e[e].guarantee;
				found = 1;
			}
	free(v);
	return found;
}

/* Sets the guarantee on one device's book: root itself (acting as the
 * group's owner, it takes its own rights back for the write), anyone else
 * through the guard service. 0, or -1 with err. */
static int set_one(const struct cli_regrant *r, const unsigned char *uuid, uint64_t g, char *err,
                   size_t errlen)
{
	char text[48];
	uint64_t old = 0;
	int rc;
	vr_format_uuid(uuid, text, sizeof text);
	if (getuid() == 0 && vr_devbook_host_pids()) {
		uid_t as = geteuid();
		if (as != 0 && seteuid(0) != 0) {
			vr_seterr(err, errlen, "cannot take root's rights back: %s",
			          strerror(errno));
			return -1;
		}
		struct vr_devbook_ask a = {.uid = r->uid,
		                           .ident = r->ident,
		                           .guarantee = g,
		                           .group = r->group,
		                           .card_free = cli_admit_card_free,
		                           .arg = text};
		rc = vr_devbook_regrant(NULL, uuid, &a, &old, err, errlen);
		if (as != 0 && seteuid(as) != 0)
			rc = -EPERM; /* never go on with rights it did not have */
	} else {
		struct vr_guard_req q = {.verb = VR_GUARD_REGRANT, .bytes = g, .ident = r->ident};
		memcpy(q.uuid, uuid, VR_UUID_LEN);
		vr_text_copy(q.group, sizeof q.group, r->group);
		rc = vr_guard_ask(&q, &old, err, errlen);
	}
	return rc < 0 ? -1 : 0;
}

void cli_regrant_undo(const struct cli_regrant *r)
{
	char err[512];
	for (int i = 0; i < r->n; i++)
		if (set_one(r, r->d[i].uuid, r->d[i].old, err, sizeof err) != 0)
			fprintf(stderr, "vramctl: limit: the guarantee could not be set back: %s\n",
			        err);
}

int cli_regrant(const char *group, vr_member *m, uint32_t uid, const struct vr_cap_new *caps, int n,
                const struct vr_limits *gua, const struct vr_launch_dev *devs, int ndev,
                struct cli_regrant *out)
{
	char err[512], text[48];
	int rc = 0;
	memset(out, 0, sizeof *out);
	out->group = group;
	out->ident = vr_devbook_ident(vr_group_key(m));
	out->uid = uid;
	for (int i = 0; i < n && rc == 0; i++) {
		const struct vr_launch_dev *dv = visible(devs, ndev, caps[i].uuid);
		uint64_t old = 0, g = 0;
		int has = held_guarantee(caps[i].uuid, group, uid, &old);
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
		if (set_one(out, caps[i].uuid, g, err, sizeof err) != 0) {
			fprintf(stderr, "vramctl: limit: group %s: %s: %s; nothing changed\n",
			        group, text, err);
			rc = -1;
			break;
		}
		memcpy(out->d[out->n].uuid, caps[i].uuid, VR_UUID_LEN);
		out->d[out->n].old = old;
		out->d[out->n].now = g;
		out->d[out->n].with_cap = with_cap;
		out->n++;
	}
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
