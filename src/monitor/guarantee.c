/*
 * guarantee.c - guarantees on the card in the views (guarantee.h). Pure:
 * the device books are read by guarantee_read.c.
 */
#include <stdarg.h>
#include <string.h>

#include "common/size.h"
#include "common/text.h"
#include "monitor/guarantee.h"
#include "monitor/prom.h"

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The device of a group device when its book was read, else NULL. */
static const struct mon_device *gdev_device(const struct mon_model *m,
                                            const struct mon_group_dev *gd)
{
	if (gd->device < 0 || gd->device >= m->ndevs)
		return NULL;
	const struct mon_device *d = &m->devs[gd->device];
	return (d->valid & MON_DEV_GUAR) ? d : NULL;
}

void mon_guarantee_derive(struct mon_model *m)
{
	for (int i = 0; i < m->ndevs; i++) {
		struct mon_device *d = &m->devs[i];
		d->unguaranteed_free =
		    (d->valid & MON_DEV_MEMORY) ? sat_sub(d->free, d->unused_guarantee) : 0;
		for (int k = 0; k < d->nguar; k++)
			d->guar[k].in_registry = 0;
	}
	for (int i = 0; i < m->ngroups; i++) {
		struct mon_group *g = &m->groups[i];
		for (int j = 0; j < g->ndev; j++) {
			struct mon_group_dev *gd = &g->dev[j];
			gd->guarantee = 0;
			/* The book knows a group by its name and its owner: the
			 * snapshot does not carry the books' key. */
			struct mon_device *d = (struct mon_device *)gdev_device(m, gd);
			for (int k = 0; d && k < d->nguar; k++)
				if (d->guar[k].uid == (uint32_t)g->owner &&
				    !strcmp(d->guar[k].group, g->name)) {
					gd->guarantee = d->guar[k].guarantee;
					d->guar[k].in_registry = 1;
					break;
				}
			gd->borrowed = sat_sub(gd->on_card, gd->guarantee);
		}
	}
}

int mon_guarantee_any(const struct mon_model *m)
{
	for (int i = 0; i < m->ndevs; i++)
		if ((m->devs[i].valid & MON_DEV_GUAR) && m->devs[i].nguar_all)
			return 1;
	return 0;
}

const char *mon_guarantee_text(const struct mon_model *m, const struct mon_group_dev *gd, char *buf,
                               int borrowed)
{
	if (!gdev_device(m, gd))
		return "-";
	if (!borrowed && !gd->guarantee)
		return "none";
	return vr_format_size(borrowed ? gd->borrowed : gd->guarantee, buf, 32);
}

/* "GPU n", or the device's UUID when it has no NVML index. */
static const char *dev_name(const struct mon_model *m, int i, char *buf, size_t len)
{
	int idx = mon_model_gpu_index(m, i, 1);
	if (idx >= 0)
		snprintf(buf, len, "GPU %d", idx);
	else
		snprintf(buf, len, "%s", m->devs[i].uuid);
	return buf;
}

/* Appends to buf while there is room. */
__attribute__((format(printf, 4, 5))) static void add(char *buf, size_t len, size_t *n,
                                                      const char *fmt, ...)
{
	if (*n >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	*n += k > 0 ? (size_t)k : 0;
}

const char *mon_guarantee_line(const struct mon_model *m, int i, char *buf, size_t len)
{
	const struct mon_device *d = &m->devs[i];
	if (!(d->valid & MON_DEV_GUAR) || !d->nguar_all)
		return NULL;
	char gpu[MON_UUID_MAX + 8], a[32], b[32], c[32];
	size_t n = 0;
	add(buf, len, &n, "%s: guarantees %s (%s unused); unguaranteed free %s; held by:",
	    dev_name(m, i, gpu, sizeof gpu), vr_format_size(d->guaranteed, a, sizeof a),
	    vr_format_size(d->unused_guarantee, b, sizeof b),
	    (d->valid & MON_DEV_MEMORY) ? vr_format_size(d->unguaranteed_free, c, sizeof c)
	                                : "unknown");
	for (int k = 0; k < d->nguar; k++) {
		const struct mon_guarantee *e = &d->guar[k];
		char name[4 * VR_GROUP_NAME_MAX + 8];
		add(buf, len, &n, "%s %s (uid %u%s) %s, %s in use", k ? ";" : "",
		    vr_text_escape(name, sizeof name, e->group), (unsigned)e->uid,
		    e->in_registry ? "" : ", not in this registry",
		    vr_format_size(e->guarantee, a, sizeof a),
		    vr_format_size(e->held, b, sizeof b));
	}
	if (d->nguar_all > d->nguar)
		add(buf, len, &n, "; and %d more", d->nguar_all - d->nguar);
	return buf;
}

void mon_guarantee_table(FILE *f, const struct mon_model *m)
{
	int first = 1;
	char line[MON_GUARANTEE_LINE];
	for (int i = 0; i < m->ndevs; i++) {
		if (!mon_guarantee_line(m, i, line, sizeof line))
			continue;
		fprintf(f, "%s%s\n", first ? "\n" : "", line);
		first = 0;
	}
}

void mon_guarantee_json_dev(struct jw *w, const struct mon_device *d)
{
	int known = !!(d->valid & MON_DEV_GUAR);
	jw_u64(w, "guaranteed_bytes", d->guaranteed, known);
	jw_u64(w, "unused_guarantee_bytes", d->unused_guarantee, known);
	jw_u64(w, "unguaranteed_free_bytes", d->unguaranteed_free,
	       known && (d->valid & MON_DEV_MEMORY));
	if (!known) {
		jw_key(w, "guarantees");
		jb_puts(w, "null");
		return;
	}
	jw_open(w, "guarantees", '[');
	for (int k = 0; k < d->nguar; k++) {
		const struct mon_guarantee *e = &d->guar[k];
		jw_open(w, NULL, '{');
		jw_str(w, "group", e->group);
		jw_int(w, "uid", e->uid, 1);
		jw_int(w, "pid", e->pid, 1);
		jw_u64(w, "guarantee_bytes", e->guarantee, 1);
		jw_u64(w, "held_bytes", e->held, 1);
		jw_bool(w, "in_registry", e->in_registry);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

void mon_guarantee_json_group(struct jw *w, const struct mon_model *m,
                              const struct mon_group_dev *gd)
{
	int known = gdev_device(m, gd) != NULL;
	jw_u64(w, "guarantee_bytes", gd->guarantee, known && gd->guarantee);
	jw_u64(w, "borrowed_bytes", gd->borrowed, known);
}

enum { G_GUARANTEE, G_BORROWED };

static void prom_groups(FILE *f, const struct mon_model *m, int which, const char *name,
                        const char *help)
{
	int any = 0;
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev; j++) {
			const struct mon_group_dev *gd = &m->groups[i].dev[j];
			const struct mon_device *d = gdev_device(m, gd);
			/* Borrowing is a thing only where someone holds a guarantee. */
			if (d && (which == G_GUARANTEE ? gd->guarantee != 0 : d->nguar_all != 0))
				mon_prom_group_dev(f, m, &m->groups[i], gd, name, help, &any,
				                   which == G_GUARANTEE ? gd->guarantee
				                                        : gd->borrowed);
		}
}

enum { D_GUARANTEED, D_UNUSED, D_FREE, D_HOLDER };

static void prom_devices(FILE *f, const struct mon_model *m, int which, const char *name,
                         const char *help)
{
	int any = 0;
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *d = &m->devs[i];
		if (!(d->valid & MON_DEV_GUAR) || (which == D_FREE && !(d->valid & MON_DEV_MEMORY)))
			continue;
		if (which != D_HOLDER)
			mon_prom_device(f, m, i, name, help, &any, NULL,
			                which == D_GUARANTEED ? d->guaranteed
			                : which == D_UNUSED   ? d->unused_guarantee
			                                      : d->unguaranteed_free);
		for (int k = 0; which == D_HOLDER && k < d->nguar; k++) {
			char uid[16];
			snprintf(uid, sizeof uid, "%u", (unsigned)d->guar[k].uid);
			const char *extra[] = {"group", d->guar[k].group, "uid", uid, NULL};
			mon_prom_device(f, m, i, name, help, &any, extra, d->guar[k].guarantee);
		}
	}
}

/* The series, in the order written: devices (D_*), then groups (G_*). */
static const struct {
	int group, which;
	const char *name, *help;
} series[] = {
    {0, D_GUARANTEED, "vramctl_device_guaranteed_bytes",
     "GPU memory guaranteed to groups on the GPU (any user's), by its device book."},
    {0, D_UNUSED, "vramctl_device_unused_guarantee_bytes",
     "The part of the guarantees on the GPU their groups do not hold."},
    {0, D_FREE, "vramctl_device_unguaranteed_free_bytes",
     "GPU memory free less the unused guarantees: what a group may borrow past its "
     "guarantee."},
    {0, D_HOLDER, "vramctl_device_guarantee_bytes",
     "Each guarantee on the GPU by its device book, any user's group."},
    {1, G_GUARANTEE, "vramctl_group_guarantee_bytes",
     "The group's guarantee on the GPU (absent when it has none)."},
    {1, G_BORROWED, "vramctl_group_borrowed_bytes",
     "GPU memory the card holds for the group above its guarantee (GPUs where some group "
     "holds a guarantee)."},
};

void mon_guarantee_prom(FILE *f, const struct mon_model *m)
{
	for (size_t k = 0; k < sizeof series / sizeof series[0]; k++)
		(series[k].group ? prom_groups : prom_devices)(f, m, series[k].which,
		                                               series[k].name, series[k].help);
}
