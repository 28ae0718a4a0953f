/*
 * top_history.c - the last samples of each process row, for the
 * sparklines of `vramctl top` (see top_history.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_history.h"
#include "common/text.h"

static void row_key(const struct mon_proc *p, char *buf, size_t len)
{
	snprintf(buf, len, "%d/%d/%s/%s", (int)p->host_pid, (int)p->ns_pid, p->uuid, p->group);
}

static struct hist *find(struct history *h, const char *key, int add)
{
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->rows[i].key, key))
			return &h->rows[i];
	if (!add)
		return NULL;
	if (h->n == h->cap) {
		int ncap = h->cap ? h->cap * 2 : 64;
		struct hist *r = realloc(h->rows, sizeof(*r) * (size_t)ncap);
		if (!r)
			return NULL;
		h->rows = r;
		h->cap = ncap;
	}
	struct hist *r = &h->rows[h->n++];
	memset(r, 0, sizeof(*r));
	vr_text_copy(r->key, sizeof(r->key), key); /* key is as large: it fits */
	return r;
}

double row_fraction(const struct mon_model *m, const struct mon_proc *p)
{
	if (p->valid & MON_P_CAPPED) {
		uint64_t cap = p->cap;
		if (cap == MON_NO_CAP && (p->valid & MON_P_DEVICE) &&
		    (m->devs[p->device].valid & MON_DEV_MEMORY))
			cap = m->devs[p->device].total;
		return cap && cap != MON_NO_CAP ? (double)p->on_card / (double)cap : 0;
	}
	if ((p->valid & MON_P_NVML_USED) && (p->valid & MON_P_DEVICE) &&
	    (m->devs[p->device].valid & MON_DEV_MEMORY) && m->devs[p->device].total)
		return (double)p->nvml_used / (double)m->devs[p->device].total;
	return 0;
}

void history_sample(struct history *h, const struct mon_model *m)
{
	h->tick++;
	for (int i = 0; i < m->nprocs; i++) {
		char key[256];
		row_key(&m->procs[i], key, sizeof(key));
		struct hist *r = find(h, key, 1);
		if (!r)
			continue;
		if (r->n == HIST_LEN) {
			memmove(r->v, r->v + 1, sizeof(r->v[0]) * (HIST_LEN - 1));
			r->n--;
		}
		r->v[r->n++] = (float)row_fraction(m, &m->procs[i]);
		r->seen = h->tick;
	}
	for (int i = 0; i < h->n;)
		if (h->tick - h->rows[i].seen > 60)
			h->rows[i] = h->rows[--h->n];
		else
			i++;
}

const struct hist *history_of(struct history *h, const struct mon_proc *p)
{
	char key[256];
	row_key(p, key, sizeof(key));
	return find(h, key, 0);
}

void history_free(struct history *h)
{
	free(h->rows);
	memset(h, 0, sizeof(*h));
}
