/*
 * guarantee_read.c - the device books read into the model's devices
 * (mon_guarantee_read, guarantee.h): every device's live guarantees, any
 * user's, copied without the book's lock (vr_devbook_read).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/size.h"
#include "monitor/guarantee.h"
#include "registry/devbook.h"

/* Books looked at for devices NVML did not list (a machine has fewer). */
#define LIST_MAX 64

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The live entries of v into d (the first MON_MAX_GUARANTEES listed). */
static void fill(struct mon_device *d, const struct vr_devbook_view *v)
{
	d->valid |= MON_DEV_GUAR;
	d->guaranteed = d->unused_guarantee = 0;
	d->nguar = d->nguar_all = 0;
	for (int k = 0; k < v->n; k++) {
		if (!v->e[k].live)
			continue; /* a dead group's, not reclaimed yet: no longer held */
		uint64_t g = v->e[k].guarantee, h = v->e[k].held;
		d->guaranteed = sat_add(d->guaranteed, g);
		d->unused_guarantee = sat_add(d->unused_guarantee, g > h ? g - h : 0);
		d->nguar_all++;
		if (d->nguar == MON_MAX_GUARANTEES)
			continue;
		struct mon_guarantee *e = &d->guar[d->nguar++];
		memset(e, 0, sizeof *e);
		snprintf(e->group, sizeof e->group, "%.*s", (int)sizeof e->group - 1,
		         v->e[k].group);
		e->uid = v->e[k].uid;
		e->pid = v->e[k].pid;
		e->guarantee = g;
		e->held = h;
	}
}

/* Books that could not be read: one note for all of them (a directory
 * that cannot be read would otherwise take one per GPU). */
struct unread {
	int n;
	int rc;
	char uuid[MON_UUID_MAX];
};

static void unread(struct unread *u, const char *uuid, int rc)
{
	if (!u->n++) {
		u->rc = rc;
		snprintf(u->uuid, sizeof u->uuid, "%s", uuid);
	}
}

/* Reads device i's book. */
static void read_dev(struct mon_model *m, const char *dir, int i, struct unread *u)
{
	struct mon_device *d = &m->devs[i];
	unsigned char raw[16];
	if (vr_parse_uuid(d->uuid, raw) < 0)
		return;
	struct vr_devbook_view v;
	int rc = vr_devbook_read(dir, raw, &v);
	if (rc == -ENOENT) /* no book, or nobody in it: no guarantee */
		v.n = 0;
	else if (rc < 0) {
		unread(u, d->uuid, rc);
		return;
	}
	fill(d, &v);
}

static int find(const struct mon_model *m, const char *uuid)
{
	for (int i = 0; i < m->ndevs; i++)
		if (!strcasecmp(m->devs[i].uuid, uuid))
			return i;
	return -1;
}

/* A book of a device NVML did not list (and no group names): appended when
 * some group holds a guarantee in it. 0 or -ENOMEM. */
static int add_unlisted(struct mon_model *m, const char *dir, const unsigned char uuid[16],
                        struct unread *u)
{
	char text[MON_UUID_MAX];
	vr_format_uuid(uuid, text, sizeof text);
	if (find(m, text) >= 0)
		return 0;
	struct vr_devbook_view v;
	int rc = vr_devbook_read(dir, uuid, &v);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		unread(u, text, rc);
		return 0;
	}
	struct mon_device d = {.index = -1};
	snprintf(d.uuid, sizeof d.uuid, "%s", text);
	fill(&d, &v);
	if (!d.nguar_all)
		return 0;
	struct mon_device *n = realloc(m->devs, sizeof(*n) * ((size_t)m->ndevs + 1));
	if (!n)
		return -ENOMEM;
	m->devs = n;
	m->devs[m->ndevs++] = d;
	return 0;
}

int mon_guarantee_read(struct mon_model *m, const char *dir)
{
	char dirbuf[4096];
	if (!dir) {
		if (vr_devbook_dir(dirbuf, sizeof dirbuf) < 0) {
			mon_model_note(m, "device books: $VRAMCTL_DEVICE_DIR unusable: guarantees "
			                  "unknown");
			return 0;
		}
		dir = dirbuf;
	}
	struct unread u = {0};
	int ndevs = m->ndevs;
	for (int i = 0; i < ndevs; i++)
		read_dev(m, dir, i, &u);
	unsigned char uuids[LIST_MAX][16];
	int n = vr_devbook_list(dir, uuids, LIST_MAX);
	if (n < 0 && n != -ENOENT && !u.n) /* else the note below says it */
		mon_model_note(m,
		               "device books in %s unreadable (%s): guarantees on GPUs NVML "
		               "does not list unknown",
		               dir, strerror(-n));
	for (int k = 0; k < n && k < LIST_MAX; k++)
		if (add_unlisted(m, dir, uuids[k], &u) < 0)
			return -ENOMEM;
	if (u.n == 1)
		mon_model_note(m, "device book of %s unreadable (%s): guarantees on it unknown",
		               u.uuid, u.rc == -EBADMSG ? "damaged" : strerror(-u.rc));
	else if (u.n)
		mon_model_note(m,
		               "device books of %d GPUs unreadable (the first, %s: %s): "
		               "guarantees on them unknown",
		               u.n, u.uuid, u.rc == -EBADMSG ? "damaged" : strerror(-u.rc));
	mon_guarantee_derive(m);
	return 0;
}
