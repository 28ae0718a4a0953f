/*
 * format.c - table, JSON and Prometheus text from a model. Pure: nothing
 * here reads a clock, a file or the environment.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "monitor/card.h"
#include "monitor/cap_changes.h"
#include "monitor/format.h"
#include "monitor/guarantee.h"

#include "common/size.h"
#include "common/version.h"

const char *mon_state_name(int state)
{
	switch (state) {
	case MON_PROC_ALIVE:
		return "alive";
	case MON_PROC_DEAD:
		return "dead";
	case MON_PROC_STALE:
		return "stale";
	case MON_PROC_EXITING:
		return "exiting";
	}
	return "unknown";
}

/* ---- table ------------------------------------------------------------ */

/* A grid of cells whose column widths are taken from the widest cell.
 * Each row is given as nargs cells; the arguments whose bit is set in hide
 * are left out (columns shown only sometimes: SPILLED, COUNTS). */
struct grid {
	int ncols, nrows, cap;
	char **cells; /* nrows * ncols, owned */
	int oom;
	unsigned hide;
};

#define GRID_MAX_COLS 24

static struct grid grid_make(int nargs, unsigned hide)
{
	return (struct grid){.ncols = nargs - __builtin_popcount(hide), .hide = hide};
}

static void grid_row(struct grid *g, ...)
{
	if (g->oom)
		return;
	if (g->nrows == g->cap) {
		int ncap = g->cap ? g->cap * 2 : 16;
		char **n = realloc(g->cells, sizeof(*n) * (size_t)ncap * (size_t)g->ncols);
		if (!n) {
			g->oom = 1;
			return;
		}
		g->cells = n;
		g->cap = ncap;
	}
	va_list ap;
	va_start(ap, g);
	for (int c = 0, arg = 0; c < g->ncols; arg++) {
		/* Cells hold text from other processes (command lines): escaped. */
		const char *s = va_arg(ap, const char *);
		if (g->hide & (1u << arg))
			continue;
		char safe[1024];
		char *d = strdup(vr_text_escape(safe, sizeof(safe), s));
		if (!d)
			g->oom = 1;
		g->cells[g->nrows * g->ncols + c++] = d;
	}
	va_end(ap);
	g->nrows++;
}

/* Prints the grid; the last column is never padded (it holds free text). */
static void grid_print(FILE *f, struct grid *g, const char *indent)
{
	int w[GRID_MAX_COLS] = {0};
	for (int r = 0; r < g->nrows; r++)
		for (int c = 0; c < g->ncols && c < GRID_MAX_COLS; c++) {
			const char *s = g->cells[r * g->ncols + c];
			int l = s ? (int)strlen(s) : 0;
			if (l > w[c])
				w[c] = l;
		}
	for (int r = 0; r < g->nrows; r++) {
		fputs(indent, f);
		for (int c = 0; c < g->ncols; c++) {
			const char *s = g->cells[r * g->ncols + c];
			if (!s)
				s = "";
			if (c == g->ncols - 1)
				fputs(s, f);
			else
				fprintf(f, "%-*s  ", w[c], s);
		}
		/* Trailing blanks of a row whose last cells are empty are trimmed by
		 * construction: the last column is printed bare. */
		fputc('\n', f);
	}
}

static void grid_free(struct grid *g)
{
	for (int i = 0; i < g->nrows * g->ncols; i++)
		free(g->cells[i]);
	free(g->cells);
	memset(g, 0, sizeof(*g));
}

/* v in the decimals dg (vr_size_digits: a row's sizes that differ never
 * read the same), or "-" when not known. */
static char *fmt_size_dg(uint64_t v, int known, int dg, char *buf, size_t len)
{
	if (!known) {
		snprintf(buf, len, "-");
		return buf;
	}
	return vr_format_size_digits(v, dg, buf, len);
}

static char *fmt_size_or(uint64_t v, int known, char *buf, size_t len)
{
	return fmt_size_dg(v, known, 1, buf, len);
}

static char *fmt_cap_dg(uint64_t cap, int dg, char *buf, size_t len)
{
	if (cap == MON_NO_CAP) {
		snprintf(buf, len, "none");
		return buf;
	}
	return vr_format_size_digits(cap, dg, buf, len);
}

const char *mon_proc_state_text(const struct mon_proc *p)
{
	if (p->valid & MON_P_ESCAPED)
		return "escaped";
	/* Held by the driver's limit alone (--enforce driver): not uncapped,
	 * though the library is not in it. */
	if (!(p->valid & MON_P_CAPPED))
		return (p->valid & MON_P_DRVLIMIT)    ? "driver"
		       : (p->valid & MON_P_ELSEWHERE) ? "elsewhere"
		                                      : "uncapped";
	if (p->valid & MON_P_ALONE)
		return "alone";
	if (p->state == MON_PROC_ALIVE && p->parked)
		return "parked";
	if (p->state == MON_PROC_ALIVE && p->wait_bytes)
		return "waiting";
	return mon_state_name(p->state);
}

/* One line per member waiting for room or parked: for what, since
 * when. */
static void table_waits(FILE *f, const struct mon_model *m)
{
	char a[32], b[32], t[40], name[4 * VR_GROUP_NAME_MAX + 8];
	int first = 1;
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		if (!(p->valid & MON_P_CAPPED) || p->state != MON_PROC_ALIVE)
			continue;
		int gpu = mon_model_gpu_index(m, p->device, !!(p->valid & MON_P_DEVICE));
		vr_text_escape(name, sizeof(name), p->group);
		if (p->wait_bytes) {
			fprintf(f,
			        "%spid %d (group %s) waits for %s on GPU %d since %s, %s of it set "
			        "aside\n",
			        first ? "\n" : "", (int)p->host_pid, name,
			        vr_format_size(p->wait_bytes, a, sizeof(a)), gpu,
			        vr_format_utc(p->wait_since / 1000000000ull, t, sizeof(t)),
			        vr_format_size(p->wait_claimed, b, sizeof(b)));
			first = 0;
		}
		if (p->parked && p->parked_bytes) {
			fprintf(f,
			        "%spid %d (group %s) is parked since %s: %s of GPU %d on the host, "
			        "back at its next driver call\n",
			        first ? "\n" : "", (int)p->host_pid, name,
			        vr_format_utc(p->parked_since / 1000000000ull, t, sizeof(t)),
			        vr_format_size(p->parked_bytes, a, sizeof(a)), gpu);
			first = 0;
		}
	}
}

const char *mon_alone_why(const struct mon_model *m, const struct mon_proc *p)
{
	if (!(p->valid & MON_P_ALONE) || p->alone < 1 || p->alone > m->nalone)
		return NULL;
	return m->alone[p->alone - 1].why;
}

/* One line per process capped by books of its own: its cap holds for it
 * alone, and why. */
static void table_alone(FILE *f, const struct mon_model *m)
{
	char why[4 * MON_ALONE_WHY], name[4 * VR_GROUP_NAME_MAX + 8];
	for (int i = 0; i < m->nalone; i++) {
		const struct mon_proc *p = NULL;
		for (int k = 0; k < m->nprocs && !p; k++)
			if (m->procs[k].alone == i + 1)
				p = &m->procs[k];
		if (!p)
			continue;
		fprintf(f,
		        "%spid %d keeps its own books (group %s): its cap holds for it alone, "
		        "not in its group's: %s\n",
		        i == 0 ? "\n" : "", (int)m->alone[i].pid,
		        vr_text_escape(name, sizeof(name), p->group),
		        vr_text_escape(why, sizeof(why), m->alone[i].why));
	}
}

/* v in decimal when known, else the text none ("-" in a table, "" in a
 * Prometheus label). */
static const char *fmt_int_or(long long v, int known, const char *none, char *buf, size_t len)
{
	if (known)
		snprintf(buf, len, "%lld", v);
	else
		snprintf(buf, len, "%s", none);
	return buf;
}

/* The GPU index of a model device as text, else none. */
static const char *gpu_text(const struct mon_model *m, int device, int known, const char *none,
                            char *buf, size_t len)
{
	int idx = mon_model_gpu_index(m, device, known);
	return fmt_int_or(idx, idx >= 0, none, buf, len);
}

/* vramctl_group_cap_changes_total, per group that has had one. */
static void prom_cap_changes(FILE *f, const struct mon_model *m)
{
	int any = 0;
	for (int i = 0; i < m->ngroups; i++) {
		if (!m->groups[i].changes_total)
			continue;
		if (!any)
			mon_prom_head(f, "vramctl_group_cap_changes_total", "counter",
			              "Changes of the group's caps while it ran (vramctl limit).");
		any = 1;
		const char *labels[] = {"group", m->groups[i].name, NULL};
		mon_prom_sample(f, "vramctl_group_cap_changes_total", labels,
		                m->groups[i].changes_total);
	}
}

/* vramctl_group_denied_total, per group: refusals since the group
 * started, its members' gone ones included (a process's own counter goes
 * with it). */
static void prom_group_denials(FILE *f, const struct mon_model *m)
{
	for (int i = 0; i < m->ngroups; i++) {
		if (!i)
			mon_prom_head(
			    f, "vramctl_group_denied_total", "counter",
			    "Allocations refused to the group's members since it started, "
			    "members gone included.");
		const char *labels[] = {"group", m->groups[i].name, NULL};
		mon_prom_sample(f, "vramctl_group_denied_total", labels, m->groups[i].denials);
	}
}

/* 1 when some group spills (or did): the tables then show SPILLED columns. */
static int model_spills(const struct mon_model *m)
{
	for (int i = 0; i < m->ngroups; i++)
		if (m->groups[i].spill_budget || m->groups[i].spilled)
			return 1;
	for (int i = 0; i < m->nprocs; i++)
		if (m->procs[i].spilled)
			return 1;
	return 0;
}

/* 1 when some capped row's cap counts allocations only: the process table
 * then shows COUNTS. */
static int model_counts_allocations(const struct mon_model *m)
{
	for (int i = 0; i < m->nprocs; i++)
		if ((m->procs[i].valid & MON_P_CAPPED) &&
		    m->procs[i].counting != VRAMCTL_COUNTING_CARD)
			return 1;
	return 0;
}

/* One line per group and GPU over its cap on the card, with the reason. */
static void table_over_cap(FILE *f, const struct mon_model *m)
{
	char gpu[16], why[256], name[4 * VR_GROUP_NAME_MAX + 8];
	int first = 1;
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev; j++) {
			const struct mon_group_dev *gd = &m->groups[i].dev[j];
			if (!gd->over_cap)
				continue;
			fprintf(f, "%sgroup %s on GPU %s: %s; %s\n", first ? "\n" : "",
			        vr_text_escape(name, sizeof(name), m->groups[i].name),
			        gpu_text(m, gd->device, 1, "-", gpu, sizeof(gpu)),
			        mon_over_cap_reason(gd, why, sizeof(why)), mon_over_cap_effect(gd));
			first = 0;
		}
}

/* 1 when some row has a container ID: the process table then shows CONTAINER. */
static int model_containers(const struct mon_model *m)
{
	for (int i = 0; i < m->nprocs; i++)
		if (m->procs[i].container_id[0])
			return 1;
	return 0;
}

/* One process row of the table (20 cells, as the header). */
static void table_proc_row(struct grid *t, const struct mon_model *m, const struct mon_proc *p)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], k[32], h[32], sp[32], drv[320];
	int capped = !!(p->valid & MON_P_CAPPED);
	int escaped = !!(p->valid & MON_P_ESCAPED);
	int oncard = !!(p->valid & MON_P_ON_CARD);
	char pid[16], nspid[16], denied[24], user[40];
	char ctr[13]; /* the short container ID, as docker ps and crictl ps show it */
	snprintf(ctr, sizeof(ctr), "%.12s", p->container_id);
	/* A dead member's process is gone: no PID here to show, which
	 * "-" (unknown) beside its NSPID did not say. */
	fmt_int_or(p->host_pid, !!(p->valid & MON_P_HOST_PID),
	           capped && p->state == MON_PROC_DEAD ? "gone" : "-", pid, sizeof(pid));
	fmt_int_or(p->ns_pid, !!(p->valid & MON_P_NS_PID), "-", nspid, sizeof(nspid));
	if (capped)
		snprintf(denied, sizeof(denied), "%" PRIu64, p->denied_count);
	else
		snprintf(denied, sizeof(denied), "-");
	if (p->valid & MON_P_USER)
		snprintf(user, sizeof(user), "%s", p->user);
	else
		snprintf(user, sizeof(user), "-");
	const char *nvml;
	if (p->valid & MON_P_NVML_USED)
		nvml = vr_format_size(p->nvml_used, d, sizeof(d));
	else if (p->valid & MON_P_NVML)
		nvml = "unknown";
	else
		nvml = "-";
	/* ALLOCATED + OVERHEAD is ON CARD: enough decimals that none of them,
	 * the cap and the peak read as another (rounding aside). */
	int dg = mon_proc_digits(p);
	grid_row(t, pid, nspid,
	         gpu_text(m, p->device, !!(p->valid & MON_P_DEVICE), "-", h, sizeof(h)),
	         mon_proc_state_text(p), capped || escaped ? p->group : "-",
	         capped || escaped ? fmt_cap_dg(p->cap, dg, a, sizeof(a)) : "-",
	         fmt_size_dg(p->allocated, capped && oncard, dg, b, sizeof(b)),
	         fmt_size_dg(p->on_card, oncard, dg, k, sizeof(k)),
	         fmt_size_dg(p->card_overhead, capped && oncard, dg, g, sizeof(g)),
	         fmt_size_dg(p->peak, capped, dg, c, sizeof(c)),
	         fmt_size_or(p->spilled, capped, sp, sizeof(sp)), nvml, denied,
	         fmt_size_or(p->host_pinned, capped, e, sizeof(e)),
	         capped ? mon_counting_text(p->counting) : "-", mon_enforcer_name(p),
	         mon_drv_text(p, drv, sizeof(drv)), user, ctr[0] ? ctr : "-",
	         (p->valid & MON_P_COMMAND) ? p->command : "-");
}

int mon_format_table(FILE *f, const struct mon_model *m)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32], sp[32], gu[32], bo[32];
	int spills = model_spills(m);

	/* Devices. */
	if (m->ndevs == 0) {
		fprintf(f, "No GPU %s.\n",
		        (m->valid & MON_M_NVML) ? "found by NVML" : "known (NVML not available)");
	} else {
		struct grid t = grid_make(9, spills ? 0 : 1u << 6);
		grid_row(&t, "GPU", "NAME", "TOTAL", "USED", "FREE", "CAPS", "SPILLED", "STATE",
		         "UUID");
		for (int i = 0; i < m->ndevs; i++) {
			const struct mon_device *v = &m->devs[i];
			int mem = !!(v->valid & MON_DEV_MEMORY);
			const char *state = !mem               ? "unknown"
			                    : v->overcommitted ? "OVERCOMMITTED"
			                                       : "ok";
			char caps[48];
			if (v->ncapped)
				snprintf(caps, sizeof(caps), "%s",
				         vr_format_size(v->caps_sum, g, sizeof(g)));
			else
				snprintf(caps, sizeof(caps), "none");
			grid_row(&t, gpu_text(m, i, 1, "-", h, sizeof(h)),
			         (v->valid & MON_DEV_NAME) ? v->name : "-",
			         fmt_size_or(v->total, mem, a, sizeof(a)),
			         fmt_size_or(v->used, mem, b, sizeof(b)),
			         fmt_size_or(v->free, mem, c, sizeof(c)), caps,
			         vr_format_size(v->spilled, sp, sizeof(sp)), state,
			         v->uuid[0] ? v->uuid : "-");
		}
		grid_print(f, &t, "");
		grid_free(&t);
		for (int i = 0; i < m->ndevs; i++) {
			const struct mon_device *v = &m->devs[i];
			if (!(v->valid & MON_DEV_MEMORY) || !v->reserved)
				continue;
			int dg =
			    vr_size_digits((uint64_t[]){v->total, v->total + v->reserved}, 2, 0);
			fprintf(
			    f,
			    "GPU %s: TOTAL is what programs can have: NVML's total, %s, less %s "
			    "the driver keeps for itself\n",
			    gpu_text(m, i, 1, "-", h, sizeof(h)),
			    vr_format_size_digits(v->total + v->reserved, dg, a, sizeof(a)),
			    vr_format_size(v->reserved, b, sizeof(b)));
		}
	}

	/* Groups. */
	fputc('\n', f);
	if (m->ngroups == 0) {
		fprintf(f, "No vramctl group%s.\n",
		        (m->valid & MON_M_REGISTRY) ? "" : " (registry not readable)");
	} else {
		/* GUARANTEE and BORROWED where some GPU holds a guarantee. */
		struct grid t =
		    grid_make(14, (spills ? 0 : 1u << 10) | (mon_guarantee_any(m) ? 0 : 3u << 3));
		grid_row(&t, "GROUP", "GPU", "CAP", "GUARANTEE", "BORROWED", "ALLOCATED", "ON CARD",
		         "OVERHEAD", "PEAK", "DEAD HELD", "SPILLED", "MEMBERS", "DEAD", "SPEC");
		for (int i = 0; i < m->ngroups; i++) {
			const struct mon_group *gr = &m->groups[i];
			char mem[16], dead[16];
			snprintf(mem, sizeof(mem), "%d", gr->nmembers);
			snprintf(dead, sizeof(dead), "%d", gr->ndead);
			if (gr->ndev == 0)
				grid_row(&t, gr->name, "-", "-", "-", "-", "-", "-", "-", "-", "-",
				         "-", mem, dead, gr->limit_spec);
			for (int j = 0; j < gr->ndev; j++) {
				const struct mon_group_dev *gd = &gr->dev[j];
				uint64_t alloc = gd->on_card - gd->card_overhead;
				int dg = mon_group_digits(gd);
				grid_row(&t, gr->name,
				         gpu_text(m, gd->device, 1, "-", h, sizeof(h)),
				         fmt_cap_dg(gd->cap, dg, a, sizeof(a)),
				         mon_guarantee_text(m, gd, gu, 0),
				         mon_guarantee_text(m, gd, bo, 1),
				         vr_format_size_digits(alloc, dg, b, sizeof(b)),
				         vr_format_size_digits(gd->on_card, dg, c, sizeof(c)),
				         vr_format_size_digits(gd->card_overhead, dg, e, sizeof(e)),
				         vr_format_size_digits(gd->peak, dg, g, sizeof(g)),
				         vr_format_size(gd->dead_in_use, d, sizeof(d)),
				         vr_format_size(gd->spilled, sp, sizeof(sp)), mem, dead,
				         gr->limit_spec);
			}
		}
		grid_print(f, &t, "");
		grid_free(&t);
		table_over_cap(f, m);
		mon_cap_changes_table(f, m);
		mon_guarantee_table(f, m);
	}

	/* Processes. */
	fputc('\n', f);
	if (m->nprocs == 0) {
		fprintf(f, "No GPU process%s.\n",
		        (m->valid & MON_M_NVML) ? "" : " with a vramctl record");
	} else {
		int counts = model_counts_allocations(m);
		unsigned hide = (spills ? 0 : 1u << 10) | (counts ? 0 : 1u << 14);
		hide |= (mon_drv_any(m) ? 0 : 3u << 15) | (model_containers(m) ? 0 : 1u << 18);
		struct grid t = grid_make(20, hide);
		grid_row(&t, "PID", "NSPID", "GPU", "STATE", "GROUP", "CAP", "ALLOCATED", "ON CARD",
		         "OVERHEAD", "PEAK", "SPILLED", "NVML", "DENIED", "PINNED", "COUNTS",
		         "ENFORCER", "DRIVER LIMIT", "USER", "CONTAINER", "COMMAND");
		for (int i = 0; i < m->nprocs; i++)
			table_proc_row(&t, m, &m->procs[i]);
		grid_print(f, &t, "");
		grid_free(&t);
		table_alone(f, m);
		table_waits(f, m);
	}

	char safe[MON_NOTE_LEN * 4];
	for (int i = 0; i < m->nnotes; i++)
		fprintf(f, "%snote: %s\n", i == 0 ? "\n" : "",
		        vr_text_escape(safe, sizeof(safe), m->notes[i]));
	return ferror(f) ? -EIO : 0;
}

/* ---- Prometheus ------------------------------------------------------- */

enum dev_metric { DM_TOTAL, DM_USED, DM_FREE, DM_CAPS, DM_OVER, DM_SPILLED };
enum grp_metric { GM_LIMIT, GM_USED, GM_PEAK, GM_DEAD, GM_SPILLED, GM_CARD, GM_OVERHEAD, GM_OVER };
enum proc_metric {
	PM_USED,
	PM_PEAK,
	PM_DENIED,
	PM_LAST_DENIED,
	PM_SPILLED,
	PM_PINNED,
	PM_ALONE,
	PM_NVML,
	PM_CARD,
	PM_OVERHEAD,
	PM_WAITING,
	PM_WAITING_SINCE,
	PM_PARKED,
	PM_PARKED_SINCE,
	PM_DRV_LIMIT,
	PM_DRV_USED,
	PM_ESCAPED
};

static void prom_devices(FILE *f, const struct mon_model *m, enum dev_metric which,
                         const char *name, const char *help)
{
	int any = 0;
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *d = &m->devs[i];
		int mem = !!(d->valid & MON_DEV_MEMORY);
		uint64_t v;
		switch (which) {
		case DM_TOTAL:
			v = d->total;
			break;
		case DM_USED:
			v = d->used;
			break;
		case DM_FREE:
			v = d->free;
			break;
		case DM_CAPS:
			v = d->caps_sum;
			mem = 1;
			break;
		case DM_SPILLED: /* only where some group spills (model_spills) */
			v = d->spilled;
			mem = model_spills(m);
			break;
		default:
			v = (uint64_t)d->overcommitted;
			break;
		}
		if (mem)
			mon_prom_device(f, m, i, name, help, &any, NULL, v);
	}
}

static void prom_groups(FILE *f, const struct mon_model *m, enum grp_metric which, const char *name,
                        const char *help)
{
	int any = 0;
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		for (int j = 0; j < g->ndev; j++) {
			const struct mon_group_dev *gd = &g->dev[j];
			uint64_t v = which == GM_LIMIT      ? gd->cap
			             : which == GM_USED     ? gd->in_use
			             : which == GM_SPILLED  ? gd->spilled
			             : which == GM_DEAD     ? gd->dead_in_use
			             : which == GM_CARD     ? gd->on_card
			             : which == GM_OVERHEAD ? gd->card_overhead
			             : which == GM_OVER     ? (uint64_t)(gd->over_cap > 0)
			                                    : gd->peak;
			if ((which == GM_LIMIT || which == GM_OVER) && gd->cap == MON_NO_CAP)
				continue;
			if (which == GM_DEAD && !gd->dead_in_use)
				continue;
			if (which == GM_SPILLED && !g->spill_budget && !gd->spilled)
				continue;
			mon_prom_group_dev(f, m, g, gd, name, help, &any, v);
		}
	}
}

static void prom_procs(FILE *f, const struct mon_model *m, enum proc_metric which, const char *name,
                       const char *type, const char *help)
{
	int any = 0;
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		uint64_t v;
		if (which == PM_ESCAPED) { /* a job's process outside its cap */
			if (!(p->valid & MON_P_ESCAPED))
				continue;
			v = (p->valid & MON_P_NVML_USED) ? p->nvml_used : 0;
		} else if (which == PM_NVML || which >= PM_DRV_LIMIT) { /* capped or not */
			if (!(p->valid & (which == PM_NVML ? MON_P_NVML_USED : MON_P_DRVLIMIT)))
				continue;
			v = which == PM_NVML        ? p->nvml_used
			    : which == PM_DRV_LIMIT ? p->drv.hard
			                            : p->drv.used;
		} else {
			if (!(p->valid & MON_P_CAPPED))
				continue;
			/* A dead record's numbers are not a live process's usage. */
			if (p->state != MON_PROC_ALIVE)
				continue;
			if (which == PM_ALONE && !(p->valid & MON_P_ALONE))
				continue;
			if ((which == PM_WAITING || which == PM_WAITING_SINCE) && !p->wait_bytes)
				continue;
			if ((which == PM_PARKED || which == PM_PARKED_SINCE) &&
			    !(p->parked && p->parked_bytes))
				continue;
			v = which == PM_ALONE           ? 1
			    : which == PM_WAITING       ? p->wait_bytes
			    : which == PM_WAITING_SINCE ? p->wait_since / 1000000000ull
			    : which == PM_PARKED        ? p->parked_bytes
			    : which == PM_PARKED_SINCE  ? p->parked_since / 1000000000ull
			    : which == PM_USED          ? p->in_use
			    : which == PM_PEAK          ? p->peak
			    : which == PM_DENIED        ? p->denied_count
			    : which == PM_LAST_DENIED   ? p->last_denied
			    : which == PM_SPILLED       ? p->spilled
			    : which == PM_CARD          ? p->on_card
			    : which == PM_OVERHEAD      ? p->card_overhead
			                                : p->host_pinned;
		}
		if (!any)
			mon_prom_head(f, name, type, help);
		any = 1;
		char pid[16], nspid[16], gpu[16];
		fmt_int_or(p->host_pid, !!(p->valid & MON_P_HOST_PID), "", pid, sizeof(pid));
		fmt_int_or(p->ns_pid, !!(p->valid & MON_P_NS_PID), "", nspid, sizeof(nspid));
		gpu_text(m, p->device, !!(p->valid & MON_P_DEVICE), "", gpu, sizeof(gpu));
		/* Identity labels are one per container, as the pid is one
		 * per process, and the user one per process: they add no
		 * series. Unknown ones are left out. */
		const char *labels[] = {"pid",
		                        pid,
		                        "ns_pid",
		                        nspid,
		                        "gpu",
		                        gpu,
		                        "uuid",
		                        p->uuid,
		                        "group",
		                        (p->valid & (MON_P_CAPPED | MON_P_ESCAPED)) ? p->group : "",
		                        "user",
		                        (p->valid & MON_P_USER) ? p->user : "",
		                        "container_id",
		                        p->container_id,
		                        "pod_uid",
		                        p->pod_uid,
		                        "pod_namespace",
		                        p->pod_namespace,
		                        "pod_name",
		                        p->pod_name,
		                        "container_name",
		                        p->container_name,
		                        NULL};
		mon_prom_sample(f, name, labels, v);
	}
}

int mon_format_prom(FILE *f, const struct mon_model *m)
{
	mon_prom_head(f, "vramctl_build_info", "gauge", "vramctl version, always 1.");
	const char *bl[] = {"version", VRAMCTL_VERSION, NULL};
	mon_prom_sample(f, "vramctl_build_info", bl, 1);
	mon_prom_head(f, "vramctl_nvml_up", "gauge", "1 when NVML could be loaded and read.");
	mon_prom_sample(f, "vramctl_nvml_up", NULL, (m->valid & MON_M_NVML) ? 1 : 0);
	mon_prom_head(f, "vramctl_registry_up", "gauge",
	              "1 when the vramctl registry could be read.");
	mon_prom_sample(f, "vramctl_registry_up", NULL, (m->valid & MON_M_REGISTRY) ? 1 : 0);

	if (m->ndevs) {
		mon_prom_head(f, "vramctl_device_info", "gauge", "One series per GPU, value 1.");
		for (int i = 0; i < m->ndevs; i++) {
			const struct mon_device *d = &m->devs[i];
			char gpu[16];
			gpu_text(m, i, 1, "", gpu, sizeof(gpu));
			const char *labels[] = {"gpu",  gpu,
			                        "uuid", d->uuid,
			                        "name", (d->valid & MON_DEV_NAME) ? d->name : "",
			                        NULL};
			mon_prom_sample(f, "vramctl_device_info", labels, 1);
		}
	}
	prom_devices(f, m, DM_TOTAL, "vramctl_device_memory_total_bytes",
	             "GPU memory programs can have: NVML's total less what the driver keeps.");
	prom_devices(f, m, DM_USED, "vramctl_device_memory_used_bytes",
	             "GPU memory in use by all processes, as NVML reports it.");
	prom_devices(f, m, DM_FREE, "vramctl_device_memory_free_bytes",
	             "GPU memory free, as NVML reports it.");
	prom_devices(f, m, DM_CAPS, "vramctl_device_caps_bytes",
	             "Sum of the caps of all vramctl groups on the GPU.");
	prom_devices(f, m, DM_OVER, "vramctl_device_overcommitted",
	             "1 when the sum of caps exceeds the GPU's memory.");
	prom_devices(f, m, DM_SPILLED, "vramctl_device_spilled_bytes",
	             "Host memory that groups capped on the GPU hold past their caps (spill).");

	if (m->ngroups) {
		mon_prom_head(f, "vramctl_group_members", "gauge",
		              "Live member processes of a group.");
		for (int i = 0; i < m->ngroups; i++) {
			const char *labels[] = {"group", m->groups[i].name, NULL};
			mon_prom_sample(f, "vramctl_group_members", labels,
			                (uint64_t)m->groups[i].nmembers);
		}
	}
	prom_groups(f, m, GM_LIMIT, "vramctl_group_limit_bytes",
	            "The group's cap on the GPU (absent when uncapped).");
	prom_groups(f, m, GM_USED, "vramctl_group_used_bytes",
	            "GPU memory the group's live members hold by vramctl's books: their "
	            "allocations plus their overhead on the card (contexts, modules, driver use) "
	            "where their cap counts it.");
	prom_groups(f, m, GM_PEAK, "vramctl_group_peak_bytes",
	            "Highest GPU memory held by the group by vramctl's books (overhead "
	            "included).");
	prom_groups(f, m, GM_CARD, "vramctl_group_card_bytes",
	            "GPU memory the card holds for the group: its live and dead members' books, "
	            "or NVML's per-process figure where larger.");
	prom_groups(f, m, GM_OVERHEAD, "vramctl_group_overhead_bytes",
	            "The part of vramctl_group_card_bytes its members did not allocate through "
	            "vramctl: contexts, modules, local memory, driver use.");
	prom_groups(f, m, GM_OVER, "vramctl_group_over_cap",
	            "1 when the group holds more on the card than its cap (its members' overhead "
	            "grew past it); where vramctl_group_used_bytes and "
	            "vramctl_group_dead_used_bytes pass the cap too, every allocation is refused.");
	prom_groups(f, m, GM_DEAD, "vramctl_group_dead_used_bytes",
	            "GPU memory still booked to the group's dead members, returned at the next "
	            "reclaim (groups that have some).");
	prom_groups(f, m, GM_SPILLED, "vramctl_group_spilled_bytes",
	            "Host memory the group holds past its cap on the GPU (spill; groups with a "
	            "spill budget).");
	prom_cap_changes(f, m);
	prom_group_denials(f, m);
	mon_guarantee_prom(f, m);
	int any_budget = 0;
	for (int i = 0; i < m->ngroups; i++) {
		if (!m->groups[i].spill_budget)
			continue;
		if (!any_budget)
			mon_prom_head(
			    f, "vramctl_group_spill_budget_bytes", "gauge",
			    "Host memory the group may spill past its caps, all GPUs together.");
		any_budget = 1;
		const char *labels[] = {"group", m->groups[i].name, NULL};
		mon_prom_sample(f, "vramctl_group_spill_budget_bytes", labels,
		                m->groups[i].spill_budget);
	}

	prom_procs(f, m, PM_USED, "vramctl_process_used_bytes", "gauge",
	           "GPU memory a capped process holds by vramctl's books: what it allocated plus "
	           "its overhead on the card (context, modules, driver use) where its cap counts "
	           "it.");
	prom_procs(f, m, PM_PEAK, "vramctl_process_peak_bytes", "gauge",
	           "Highest GPU memory a capped process has held by vramctl's books (overhead "
	           "included).");
	prom_procs(f, m, PM_DENIED, "vramctl_process_denied_total", "counter",
	           "Allocations refused to a capped process because of its cap.");
	prom_procs(f, m, PM_LAST_DENIED, "vramctl_process_last_denied_bytes", "gauge",
	           "Size of the last allocation refused to a capped process.");
	prom_procs(f, m, PM_SPILLED, "vramctl_process_spilled_bytes", "gauge",
	           "Bytes a capped process has served from host memory past its cap.");
	prom_procs(f, m, PM_PINNED, "vramctl_process_host_pinned_bytes", "gauge",
	           "Pinned host memory a capped process holds (not capped).");
	prom_procs(f, m, PM_CARD, "vramctl_process_card_bytes", "gauge",
	           "GPU memory the card holds for a capped process: its books, or NVML's "
	           "per-process figure where larger.");
	prom_procs(f, m, PM_OVERHEAD, "vramctl_process_overhead_bytes", "gauge",
	           "The part of vramctl_process_card_bytes the process did not allocate through "
	           "vramctl: its context, modules, local memory, driver use.");
	prom_procs(f, m, PM_ALONE, "vramctl_process_own_books", "gauge",
	           "1 for a capped process that keeps books of its own (it could not join its "
	           "group): its cap holds for it alone, outside its group's sums.");
	prom_procs(f, m, PM_WAITING, "vramctl_process_waiting_bytes", "gauge",
	           "An allocation a capped process waits for room for (--wait): its size.");
	prom_procs(f, m, PM_WAITING_SINCE, "vramctl_process_waiting_since_seconds", "gauge",
	           "When that wait began (seconds since the epoch).");
	prom_procs(f, m, PM_PARKED, "vramctl_process_parked_bytes", "gauge",
	           "GPU memory of a parked process (--park-idle, vramctl park), held in host "
	           "memory until its next driver call.");
	prom_procs(f, m, PM_PARKED_SINCE, "vramctl_process_parked_since_seconds", "gauge",
	           "When the process was parked (seconds since the epoch).");
	prom_procs(f, m, PM_NVML, "vramctl_process_nvml_used_bytes", "gauge",
	           "GPU memory of a process as NVML reports it (capped or not).");
	prom_procs(f, m, PM_ESCAPED, "vramctl_process_escaped_bytes", "gauge",
	           "GPU memory of a process of a capped job that runs outside the cap (state "
	           "escaped), as NVML reports it; the group label is its job's.");
	prom_procs(f, m, PM_DRV_LIMIT, "vramctl_process_driver_limit_bytes", "gauge",
	           "The NVIDIA driver's hard memory limit over the process's cgroup.");
	prom_procs(f, m, PM_DRV_USED, "vramctl_process_driver_used_bytes", "gauge",
	           "What the cgroup under that driver limit holds on the GPU.");

	int ndead = 0;
	for (int i = 0; i < m->nprocs; i++)
		if ((m->procs[i].valid & MON_P_CAPPED) && m->procs[i].state != MON_PROC_ALIVE)
			ndead++;
	mon_prom_head(f, "vramctl_dead_records", "gauge",
	              "Registry records whose process is gone or whose PID was reused.");
	mon_prom_sample(f, "vramctl_dead_records", NULL, (uint64_t)ndead);
	int nexiting = 0;
	for (int i = 0; i < m->ngroups; i++)
		nexiting += m->groups[i].nexiting;
	mon_prom_head(f, "vramctl_exiting_records", "gauge",
	              "Records of dead processes that NVML still lists on a GPU (their memory is "
	              "being freed; their group holds it until then).");
	mon_prom_sample(f, "vramctl_exiting_records", NULL, (uint64_t)nexiting);
	return ferror(f) ? -EIO : 0;
}
