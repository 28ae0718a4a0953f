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
#include "monitor/format.h"
#include "common/json.h"

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
 * With skip >= 1, argument skip - 1 of each row given is left out (a column
 * shown only sometimes: SPILLED). */
struct grid {
	int ncols, nrows, cap;
	char **cells; /* nrows * ncols, owned */
	int oom;
	int skip;
};

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
	for (int c = 0, arg = 0; c < g->ncols; c++, arg++) {
		/* Cells hold text from other processes (command lines): escaped. */
		const char *s = va_arg(ap, const char *);
		if (arg == g->skip - 1)
			s = va_arg(ap, const char *);
		char safe[1024];
		char *d = strdup(vr_text_escape(safe, sizeof(safe), s));
		if (!d)
			g->oom = 1;
		g->cells[g->nrows * g->ncols + c] = d;
	}
	va_end(ap);
	g->nrows++;
}

/* Prints the grid; the last column is never padded (it holds free text). */
static void grid_print(FILE *f, struct grid *g, const char *indent)
{
	int w[16] = {0};
	for (int r = 0; r < g->nrows; r++)
		for (int c = 0; c < g->ncols && c < 16; c++) {
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

static char *fmt_size_or(uint64_t v, int known, char *buf, size_t len)
{
	if (!known) {
		snprintf(buf, len, "-");
		return buf;
	}
	return vr_format_size(v, buf, len);
}

static char *fmt_cap(uint64_t cap, char *buf, size_t len)
{
	if (cap == MON_NO_CAP) {
		snprintf(buf, len, "none");
		return buf;
	}
	return vr_format_size(cap, buf, len);
}

static const char *proc_state_text(const struct mon_proc *p)
{
	if (!(p->valid & MON_P_CAPPED))
		return "uncapped";
	return mon_state_name(p->state);
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

/* The GPU index of a model device, or -1 when unknown (a device only the
 * registry names has none). */
static int dev_index_of(const struct mon_model *m, int device, int known)
{
	if (!known || device < 0 || device >= m->ndevs)
		return -1;
	if (!(m->devs[device].valid & MON_DEV_INDEX))
		return -1;
	return m->devs[device].index;
}

/* The GPU index of a model device as text, else none. */
static const char *gpu_text(const struct mon_model *m, int device, int known, const char *none,
                            char *buf, size_t len)
{
	int idx = dev_index_of(m, device, known);
	return fmt_int_or(idx, idx >= 0, none, buf, len);
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

int mon_format_table(FILE *f, const struct mon_model *m)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], h[32], sp[32];
	int spills = model_spills(m);

	/* Devices. */
	if (m->ndevs == 0) {
		fprintf(f, "No GPU %s.\n",
		        (m->valid & MON_M_NVML) ? "found by NVML" : "known (NVML not available)");
	} else {
		struct grid t = {.ncols = spills ? 9 : 8, .skip = spills ? 0 : 7};
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
	}

	/* Groups. */
	fputc('\n', f);
	if (m->ngroups == 0) {
		fprintf(f, "No vramctl group%s.\n",
		        (m->valid & MON_M_REGISTRY) ? "" : " (registry not readable)");
	} else {
		struct grid t = {.ncols = spills ? 10 : 9, .skip = spills ? 0 : 7};
		grid_row(&t, "GROUP", "GPU", "CAP", "IN USE", "PEAK", "DEAD HELD", "SPILLED",
		         "MEMBERS", "DEAD", "SPEC");
		for (int i = 0; i < m->ngroups; i++) {
			const struct mon_group *gr = &m->groups[i];
			char mem[16], dead[16];
			snprintf(mem, sizeof(mem), "%d", gr->nmembers);
			snprintf(dead, sizeof(dead), "%d", gr->ndead);
			if (gr->ndev == 0)
				grid_row(&t, gr->name, "-", "-", "-", "-", "-", "-", mem, dead,
				         gr->limit_spec);
			for (int j = 0; j < gr->ndev; j++) {
				const struct mon_group_dev *gd = &gr->dev[j];
				grid_row(&t, gr->name,
				         gpu_text(m, gd->device, 1, "-", h, sizeof(h)),
				         fmt_cap(gd->cap, a, sizeof(a)),
				         vr_format_size(gd->in_use, b, sizeof(b)),
				         vr_format_size(gd->peak, c, sizeof(c)),
				         vr_format_size(gd->dead_in_use, d, sizeof(d)),
				         vr_format_size(gd->spilled, sp, sizeof(sp)), mem, dead,
				         gr->limit_spec);
			}
		}
		grid_print(f, &t, "");
		grid_free(&t);
	}

	/* Processes. */
	fputc('\n', f);
	if (m->nprocs == 0) {
		fprintf(f, "No GPU process%s.\n",
		        (m->valid & MON_M_NVML) ? "" : " with a vramctl record");
	} else {
		struct grid t = {.ncols = spills ? 14 : 13, .skip = spills ? 0 : 9};
		grid_row(&t, "PID", "NSPID", "GPU", "STATE", "GROUP", "CAP", "IN USE", "PEAK",
		         "SPILLED", "NVML", "DENIED", "PINNED", "USER", "COMMAND");
		for (int i = 0; i < m->nprocs; i++) {
			const struct mon_proc *p = &m->procs[i];
			int capped = !!(p->valid & MON_P_CAPPED);
			char pid[16], nspid[16], denied[24], user[40];
			/* A dead member's process is gone: no PID here to show, which
			 * "-" (unknown) beside its NSPID did not say. */
			fmt_int_or(p->host_pid, !!(p->valid & MON_P_HOST_PID),
			           capped && p->state == MON_PROC_DEAD ? "gone" : "-", pid,
			           sizeof(pid));
			fmt_int_or(p->ns_pid, !!(p->valid & MON_P_NS_PID), "-", nspid,
			           sizeof(nspid));
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
			grid_row(
			    &t, pid, nspid,
			    gpu_text(m, p->device, !!(p->valid & MON_P_DEVICE), "-", h, sizeof(h)),
			    proc_state_text(p), capped ? p->group : "-",
			    capped ? fmt_cap(p->cap, a, sizeof(a)) : "-",
			    fmt_size_or(p->in_use, capped, b, sizeof(b)),
			    fmt_size_or(p->peak, capped, c, sizeof(c)),
			    fmt_size_or(p->spilled, capped, sp, sizeof(sp)), nvml, denied,
			    fmt_size_or(p->host_pinned, capped, e, sizeof(e)), user,
			    (p->valid & MON_P_COMMAND) ? p->command : "-");
		}
		grid_print(f, &t, "");
		grid_free(&t);
	}

	char safe[MON_NOTE_LEN * 4];
	for (int i = 0; i < m->nnotes; i++)
		fprintf(f, "%snote: %s\n", i == 0 ? "\n" : "",
		        vr_text_escape(safe, sizeof(safe), m->notes[i]));
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON (the writer: common/json.c) ------------------------------- */

int mon_format_json(FILE *f, const struct mon_model *m, int compact)
{
	struct jw w = {.f = f, .compact = compact};
	jw_open(&w, NULL, '{');
	jw_int(&w, "schema_version", MON_SCHEMA_VERSION, 1);
	jw_u64(&w, "time_ms", m->time_ms, 1);
	jw_open(&w, "nvml", '{');
	jw_bool(&w, "available", !!(m->valid & MON_M_NVML));
	jw_str(&w, "driver_version", (m->valid & MON_M_DRIVER) ? m->driver_version : NULL);
	jw_close(&w, '}');
	jw_open(&w, "registry", '{');
	jw_bool(&w, "available", !!(m->valid & MON_M_REGISTRY));
	jw_str(&w, "dir", m->registry_dir[0] ? m->registry_dir : NULL);
	jw_close(&w, '}');
	jw_open(&w, "notes", '[');
	for (int i = 0; i < m->nnotes; i++)
		jw_item_str(&w, m->notes[i]);
	jw_close(&w, ']');

	jw_open(&w, "devices", '[');
	for (int i = 0; i < m->ndevs; i++) {
		const struct mon_device *d = &m->devs[i];
		int mem = !!(d->valid & MON_DEV_MEMORY);
		jw_open(&w, NULL, '{');
		jw_int(&w, "index", d->index, !!(d->valid & MON_DEV_INDEX));
		jw_str(&w, "uuid", d->uuid[0] ? d->uuid : NULL);
		jw_str(&w, "name", (d->valid & MON_DEV_NAME) ? d->name : NULL);
		jw_u64(&w, "total_bytes", d->total, mem);
		jw_u64(&w, "used_bytes", d->used, mem);
		jw_u64(&w, "free_bytes", d->free, mem);
		jw_u64(&w, "caps_sum_bytes", d->caps_sum, 1);
		jw_int(&w, "capped_groups", d->ncapped, 1);
		jw_u64(&w, "spilled_bytes", d->spilled, 1);
		jw_key(&w, "overcommitted");
		jb_puts(&w, !mem ? "null" : d->overcommitted ? "true" : "false");
		jw_str(&w, "process_api", d->proc_api[0] ? d->proc_api : NULL);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');

	jw_open(&w, "groups", '[');
	for (int i = 0; i < m->ngroups; i++) {
		const struct mon_group *g = &m->groups[i];
		jw_open(&w, NULL, '{');
		jw_str(&w, "name", g->name);
		jw_str(&w, "limit_spec", g->limit_spec);
		jw_bool(&w, "growth", g->growth);
		jw_int(&w, "owner_uid", (long long)g->owner, 1);
		jw_int(&w, "members", g->nmembers, 1);
		jw_int(&w, "dead_members", g->ndead, 1);
		jw_int(&w, "exiting_members", g->nexiting, 1);
		jw_bool(&w, "consistent", g->consistent);
		jw_u64(&w, "spill_budget_bytes", g->spill_budget, 1);
		jw_u64(&w, "spilled_bytes", g->spilled, 1);
		jw_open(&w, "devices", '[');
		for (int j = 0; j < g->ndev; j++) {
			const struct mon_group_dev *gd = &g->dev[j];
			int idx = dev_index_of(m, gd->device, 1);
			jw_open(&w, NULL, '{');
			jw_str(&w, "uuid", gd->uuid);
			jw_int(&w, "gpu_index", idx, idx >= 0);
			jw_u64(&w, "cap_bytes", gd->cap, gd->cap != MON_NO_CAP);
			jw_u64(&w, "in_use_bytes", gd->in_use, 1);
			jw_u64(&w, "peak_bytes", gd->peak, 1);
			jw_u64(&w, "dead_in_use_bytes", gd->dead_in_use, 1);
			jw_u64(&w, "spilled_bytes", gd->spilled, 1);
			jw_close(&w, '}');
		}
		jw_close(&w, ']');
		jw_close(&w, '}');
	}
	jw_close(&w, ']');

	jw_open(&w, "processes", '[');
	for (int i = 0; i < m->nprocs; i++) {
		const struct mon_proc *p = &m->procs[i];
		int capped = !!(p->valid & MON_P_CAPPED);
		int idx = dev_index_of(m, p->device, !!(p->valid & MON_P_DEVICE));
		jw_open(&w, NULL, '{');
		jw_int(&w, "host_pid", p->host_pid, !!(p->valid & MON_P_HOST_PID));
		jw_int(&w, "ns_pid", p->ns_pid, !!(p->valid & MON_P_NS_PID));
		jw_int(&w, "gpu_index", idx, idx >= 0);
		jw_str(&w, "gpu_uuid", p->uuid[0] ? p->uuid : NULL);
		jw_bool(&w, "capped", capped);
		jw_str(&w, "state", capped ? mon_state_name(p->state) : "uncapped");
		jw_str(&w, "group", capped ? p->group : NULL);
		jw_u64(&w, "cap_bytes", p->cap, capped && p->cap != MON_NO_CAP);
		jw_u64(&w, "in_use_bytes", p->in_use, capped);
		jw_u64(&w, "peak_bytes", p->peak, capped);
		jw_u64(&w, "denied_count", p->denied_count, capped);
		jw_u64(&w, "last_denied_bytes", p->last_denied, capped);
		jw_u64(&w, "spilled_bytes", p->spilled, capped);
		jw_u64(&w, "host_pinned_bytes", p->host_pinned, capped);
		jw_bool(&w, "nvml_listed", !!(p->valid & MON_P_NVML));
		jw_u64(&w, "nvml_used_bytes", p->nvml_used, !!(p->valid & MON_P_NVML_USED));
		jw_int(&w, "uid", (long long)p->uid, !!(p->valid & MON_P_USER));
		jw_str(&w, "user", (p->valid & MON_P_USER) ? p->user : NULL);
		jw_str(&w, "command", (p->valid & MON_P_COMMAND) ? p->command : NULL);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	return jw_finish(&w);
}

/* ---- Prometheus ------------------------------------------------------- */

/* A label value, escaped as the exposition format requires. */
static void prom_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes name{k="v",...} value. labels: NULL-terminated key, value pairs.
 * A label whose value is unknown (empty: a GPU index or a name without
 * NVML, a PID in another namespace) is left out, never written as "". */
static void prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value)
{
	fputs(name, f);
	int n = 0;
	for (int i = 0; labels && labels[i]; i += 2) {
		if (!labels[i + 1][0])
			continue;
		fprintf(f, "%s%s=\"", n++ ? "," : "{", labels[i]);
		prom_label_value(f, labels[i + 1]);
		fputc('"', f);
	}
	if (n)
		fputc('}', f);
	fprintf(f, " %" PRIu64 "\n", value);
}

enum dev_metric { DM_TOTAL, DM_USED, DM_FREE, DM_CAPS, DM_OVER, DM_SPILLED };
enum grp_metric { GM_LIMIT, GM_USED, GM_PEAK, GM_DEAD, GM_SPILLED };
enum proc_metric { PM_USED, PM_PEAK, PM_DENIED, PM_LAST_DENIED, PM_SPILLED, PM_PINNED, PM_NVML };

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
		if (!mem)
			continue;
		if (!any)
			prom_head(f, name, "gauge", help);
		any = 1;
		char gpu[16];
		gpu_text(m, i, 1, "", gpu, sizeof(gpu));
		const char *labels[] = {"gpu", gpu, "uuid", d->uuid, NULL};
		prom_sample(f, name, labels, v);
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
			uint64_t v = which == GM_LIMIT     ? gd->cap
			             : which == GM_USED    ? gd->in_use
			             : which == GM_SPILLED ? gd->spilled
			             : which == GM_DEAD    ? gd->dead_in_use
			                                   : gd->peak;
			if (which == GM_LIMIT && gd->cap == MON_NO_CAP)
				continue;
			if (which == GM_DEAD && !gd->dead_in_use)
				continue;
			if (which == GM_SPILLED && !g->spill_budget && !gd->spilled)
				continue;
			if (!any)
				prom_head(f, name, "gauge", help);
			any = 1;
			char gpu[16];
			gpu_text(m, gd->device, 1, "", gpu, sizeof(gpu));
			const char *labels[] = {"group", g->name,  "gpu", gpu,
			                        "uuid",  gd->uuid, NULL};
			prom_sample(f, name, labels, v);
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
		if (which == PM_NVML) {
			if (!(p->valid & MON_P_NVML_USED))
				continue;
			v = p->nvml_used;
		} else {
			if (!(p->valid & MON_P_CAPPED))
				continue;
			/* A dead record's numbers are not a live process's usage. */
			if (p->state != MON_PROC_ALIVE)
				continue;
			v = which == PM_USED          ? p->in_use
			    : which == PM_PEAK        ? p->peak
			    : which == PM_DENIED      ? p->denied_count
			    : which == PM_LAST_DENIED ? p->last_denied
			    : which == PM_SPILLED     ? p->spilled
			                              : p->host_pinned;
		}
		if (!any)
			prom_head(f, name, type, help);
		any = 1;
		char pid[16], nspid[16], gpu[16];
		fmt_int_or(p->host_pid, !!(p->valid & MON_P_HOST_PID), "", pid, sizeof(pid));
		fmt_int_or(p->ns_pid, !!(p->valid & MON_P_NS_PID), "", nspid, sizeof(nspid));
		gpu_text(m, p->device, !!(p->valid & MON_P_DEVICE), "", gpu, sizeof(gpu));
		const char *labels[] = {
		    "pid", pid,    "ns_pid", nspid,   "gpu",
		    gpu,   "uuid", p->uuid,  "group", (p->valid & MON_P_CAPPED) ? p->group : "",
		    NULL};
		prom_sample(f, name, labels, v);
	}
}

int mon_format_prom(FILE *f, const struct mon_model *m)
{
	prom_head(f, "vramctl_build_info", "gauge", "vramctl version, always 1.");
	const char *bl[] = {"version", VRAMCTL_VERSION, NULL};
	prom_sample(f, "vramctl_build_info", bl, 1);
	prom_head(f, "vramctl_nvml_up", "gauge", "1 when NVML could be loaded and read.");
	prom_sample(f, "vramctl_nvml_up", NULL, (m->valid & MON_M_NVML) ? 1 : 0);
	prom_head(f, "vramctl_registry_up", "gauge", "1 when the vramctl registry could be read.");
	prom_sample(f, "vramctl_registry_up", NULL, (m->valid & MON_M_REGISTRY) ? 1 : 0);

	if (m->ndevs) {
		prom_head(f, "vramctl_device_info", "gauge", "One series per GPU, value 1.");
		for (int i = 0; i < m->ndevs; i++) {
			const struct mon_device *d = &m->devs[i];
			char gpu[16];
			gpu_text(m, i, 1, "", gpu, sizeof(gpu));
			const char *labels[] = {"gpu",  gpu,
			                        "uuid", d->uuid,
			                        "name", (d->valid & MON_DEV_NAME) ? d->name : "",
			                        NULL};
			prom_sample(f, "vramctl_device_info", labels, 1);
		}
	}
	prom_devices(f, m, DM_TOTAL, "vramctl_device_memory_total_bytes",
	             "GPU memory in all, as NVML reports it.");
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
		prom_head(f, "vramctl_group_members", "gauge", "Live member processes of a group.");
		for (int i = 0; i < m->ngroups; i++) {
			const char *labels[] = {"group", m->groups[i].name, NULL};
			prom_sample(f, "vramctl_group_members", labels,
			            (uint64_t)m->groups[i].nmembers);
		}
	}
	prom_groups(f, m, GM_LIMIT, "vramctl_group_limit_bytes",
	            "The group's cap on the GPU (absent when uncapped).");
	prom_groups(f, m, GM_USED, "vramctl_group_used_bytes",
	            "GPU memory in use by the group's live members.");
	prom_groups(f, m, GM_PEAK, "vramctl_group_peak_bytes",
	            "Highest GPU memory in use by the group.");
	prom_groups(f, m, GM_DEAD, "vramctl_group_dead_used_bytes",
	            "GPU memory still booked to the group's dead members, returned at the next "
	            "reclaim (groups that have some).");
	prom_groups(f, m, GM_SPILLED, "vramctl_group_spilled_bytes",
	            "Host memory the group holds past its cap on the GPU (spill; groups with a "
	            "spill budget).");
	int any_budget = 0;
	for (int i = 0; i < m->ngroups; i++) {
		if (!m->groups[i].spill_budget)
			continue;
		if (!any_budget)
			prom_head(
			    f, "vramctl_group_spill_budget_bytes", "gauge",
			    "Host memory the group may spill past its caps, all GPUs together.");
		any_budget = 1;
		const char *labels[] = {"group", m->groups[i].name, NULL};
		prom_sample(f, "vramctl_group_spill_budget_bytes", labels,
		            m->groups[i].spill_budget);
	}

	prom_procs(f, m, PM_USED, "vramctl_process_used_bytes", "gauge",
	           "GPU memory a capped process has allocated, by vramctl's books.");
	prom_procs(f, m, PM_PEAK, "vramctl_process_peak_bytes", "gauge",
	           "Highest GPU memory a capped process has had allocated.");
	prom_procs(f, m, PM_DENIED, "vramctl_process_denied_total", "counter",
	           "Allocations refused to a capped process because of its cap.");
	prom_procs(f, m, PM_LAST_DENIED, "vramctl_process_last_denied_bytes", "gauge",
	           "Size of the last allocation refused to a capped process.");
	prom_procs(f, m, PM_SPILLED, "vramctl_process_spilled_bytes", "gauge",
	           "Bytes a capped process has served from host memory past its cap.");
	prom_procs(f, m, PM_PINNED, "vramctl_process_host_pinned_bytes", "gauge",
	           "Pinned host memory a capped process holds (not capped).");
	prom_procs(f, m, PM_NVML, "vramctl_process_nvml_used_bytes", "gauge",
	           "GPU memory of a process as NVML reports it (capped or not).");

	int ndead = 0;
	for (int i = 0; i < m->nprocs; i++)
		if ((m->procs[i].valid & MON_P_CAPPED) && m->procs[i].state != MON_PROC_ALIVE)
			ndead++;
	prom_head(f, "vramctl_dead_records", "gauge",
	          "Registry records whose process is gone or whose PID was reused.");
	prom_sample(f, "vramctl_dead_records", NULL, (uint64_t)ndead);
	int nexiting = 0;
	for (int i = 0; i < m->ngroups; i++)
		nexiting += m->groups[i].nexiting;
	prom_head(f, "vramctl_exiting_records", "gauge",
	          "Records of dead processes that NVML still lists on a GPU (their memory is "
	          "being freed; their group holds it until then).");
	prom_sample(f, "vramctl_exiting_records", NULL, (uint64_t)nexiting);
	return ferror(f) ? -EIO : 0;
}
