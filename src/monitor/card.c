/*
 * card.c - the on-card, allocated and overhead figures (card.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"
#include "monitor/card.h"

/* One row's figures. A capped row holds at least its books' in_use on the
 * card, and at least what NVML lists for it where NVML does. */
static void row_figures(struct mon_proc *p)
{
	p->valid &= ~(unsigned)MON_P_ON_CARD;
	p->on_card = p->allocated = p->card_overhead = 0;
	if (p->valid & MON_P_CAPPED) {
		uint64_t on = p->in_use;
		if ((p->valid & MON_P_NVML_USED) && p->nvml_used > on)
			on = p->nvml_used;
		/* The books' overhead is part of in_use; a copy taken while a
		 * writer changed them may say otherwise: never below zero. */
		p->allocated = p->in_use > p->overhead ? p->in_use - p->overhead : 0;
		p->on_card = on;
		p->card_overhead = on - p->allocated;
		/* A peak below what the card holds now would contradict it:
		 * the books' peak did not see NVML's figure yet. */
		if (p->peak < on)
			p->peak = on;
		p->valid |= MON_P_ON_CARD;
	} else if (p->valid & MON_P_NVML_USED) {
		p->on_card = p->nvml_used;
		p->valid |= MON_P_ON_CARD;
	}
}

static int cmp_group_name(const void *a, const void *b)
{
	const struct mon_group *x = *(const struct mon_group *const *)a;
	const struct mon_group *y = *(const struct mon_group *const *)b;
	return strcmp(x->name, y->name);
}

static int cmp_name_group(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct mon_group *const *)elem)->name);
}

/* Row p's group device: through by_name (the groups sorted by name, nby of
 * them) when there is one, else a scan (a thousand groups and as many rows
 * would be a million comparisons). NULL when the group has no such device. */
static struct mon_group_dev *group_dev_of(struct mon_model *m, struct mon_group **by_name,
                                          const struct mon_proc *p)
{
	struct mon_group *g = NULL;
	if (by_name) {
		struct mon_group **f = bsearch(p->group, by_name, (size_t)m->ngroups,
		                               sizeof(*by_name), cmp_name_group);
		g = f ? *f : NULL;
	} else {
		for (int i = 0; i < m->ngroups && !g; i++)
			if (!strcmp(m->groups[i].name, p->group))
				g = &m->groups[i];
	}
	for (int j = 0; g && j < g->ndev; j++)
		if (g->dev[j].device == p->device)
			return &g->dev[j];
	return NULL;
}

void mon_card_figures(struct mon_model *m)
{
	/* A group's device: what its books hold, live and dead members'. */
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev; j++) {
			struct mon_group_dev *gd = &m->groups[i].dev[j];
			gd->on_card = gd->in_use + gd->dead_in_use;
			gd->card_overhead = gd->overhead < gd->on_card ? gd->overhead : gd->on_card;
		}
	/* Plus what NVML sees of its members beyond their books (a figure the
	 * library has not read yet, or a member whose cap counts allocations
	 * only). Without memory for the index, the scan gives the same sums. */
	struct mon_group **by_name = NULL;
	if (m->ngroups > 1) {
		by_name = malloc(sizeof(*by_name) * (size_t)m->ngroups);
		for (int i = 0; by_name && i < m->ngroups; i++)
			by_name[i] = &m->groups[i];
		if (by_name)
			qsort(by_name, (size_t)m->ngroups, sizeof(*by_name), cmp_group_name);
	}
	for (int i = 0; i < m->nprocs; i++) {
		struct mon_proc *p = &m->procs[i];
		row_figures(p);
		/* A process alone on its own books is not in its group's. */
		if (!(p->valid & MON_P_CAPPED) || (p->valid & MON_P_ALONE) ||
		    !(p->valid & MON_P_DEVICE) || p->on_card <= p->in_use)
			continue;
		struct mon_group_dev *gd = group_dev_of(m, by_name, p);
		if (!gd)
			continue;
		gd->on_card += p->on_card - p->in_use;
		gd->card_overhead += p->on_card - p->in_use;
	}
	free(by_name);
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev; j++) {
			struct mon_group_dev *gd = &m->groups[i].dev[j];
			gd->over_cap = gd->cap != MON_NO_CAP && gd->on_card > gd->cap
			                   ? gd->on_card - gd->cap
			                   : 0;
			if (gd->peak < gd->on_card)
				gd->peak = gd->on_card;
		}
}

const char *mon_counting_name(enum vramctl_counting c)
{
	switch (c) {
	case VRAMCTL_COUNTING_CARD:
		return "card";
	case VRAMCTL_COUNTING_ALLOCATIONS:
		return "allocations";
	case VRAMCTL_COUNTING_NO_FIGURES:
		return "no_figures";
	}
	return "unknown";
}

const char *mon_counting_text(enum vramctl_counting c)
{
	switch (c) {
	case VRAMCTL_COUNTING_CARD:
		return "card";
	case VRAMCTL_COUNTING_ALLOCATIONS:
		return "allocations only (asked)";
	case VRAMCTL_COUNTING_NO_FIGURES:
		return "allocations only (no driver figure)";
	}
	return "unknown";
}

int mon_proc_digits(const struct mon_proc *p)
{
	return vr_size_digits((uint64_t[]){p->allocated, p->on_card, p->card_overhead, p->peak,
	                                   p->cap == MON_NO_CAP ? 0 : p->cap},
	                      5, 0);
}

int mon_group_digits(const struct mon_group_dev *gd)
{
	return vr_size_digits((uint64_t[]){gd->on_card - gd->card_overhead, gd->on_card,
	                                   gd->card_overhead, gd->peak,
	                                   gd->cap == MON_NO_CAP ? 0 : gd->cap},
	                      5, 0);
}

char *mon_over_cap_reason(const struct mon_group_dev *gd, char *buf, size_t len)
{
	char by[32], ov[32], al[32], held[32], cap[32];
	if (!gd->over_cap) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	/* The figures read apart: "1 GiB held, cap 1 GiB" said over the cap
	 * of a group that held 1.01 GiB. */
	int dg = vr_size_digits((uint64_t[]){gd->on_card, gd->cap, gd->over_cap, gd->card_overhead,
	                                     gd->on_card - gd->card_overhead, gd->lowered_from},
	                        6, 0);
	if (gd->lowered_from) {
		char from[32];
		snprintf(buf, len,
		         "over cap on the card by %s: its cap was lowered from %s to %s (vramctl "
		         "limit, uid %u) below what it held; %s held, %s of it overhead",
		         vr_format_size_digits(gd->over_cap, dg, by, sizeof(by)),
		         vr_format_size_digits(gd->lowered_from, dg, from, sizeof(from)),
		         vr_format_size_digits(gd->cap, dg, cap, sizeof(cap)),
		         (unsigned)gd->lowered_by,
		         vr_format_size_digits(gd->on_card, dg, held, sizeof(held)),
		         vr_format_size_digits(gd->card_overhead, dg, ov, sizeof(ov)));
		return buf;
	}
	snprintf(buf, len,
	         "over cap on the card by %s: members' overhead (contexts, modules, driver use) "
	         "%s, allocations %s (%s held, cap %s)",
	         vr_format_size_digits(gd->over_cap, dg, by, sizeof(by)),
	         vr_format_size_digits(gd->card_overhead, dg, ov, sizeof(ov)),
	         vr_format_size_digits(gd->on_card - gd->card_overhead, dg, al, sizeof(al)),
	         vr_format_size_digits(gd->on_card, dg, held, sizeof(held)),
	         vr_format_size_digits(gd->cap, dg, cap, sizeof(cap)));
	return buf;
}

const char *mon_over_cap_effect(const struct mon_group_dev *gd)
{
	/* The library refuses by its books; NVML alone may pass the cap
	 * (members whose caps count allocations only, or a figure it has not
	 * read yet) while the books are still under it. */
	if (gd->in_use + gd->dead_in_use >= gd->cap)
		return "every allocation is refused until it is back under";
	return "its books are still under the cap (members counting allocations only, or NVML "
	       "ahead of the library's last reading), so allocations are granted up to it";
}
