/*
 * plot_draw.c - draws a trace with cairo: one panel per device, time in
 * seconds across, memory in MiB or GiB up. What the cap counted is drawn
 * thick, and named on the axis: the group's use on the card (allocations +
 * overhead) where the members measured it, else its allocations; then its
 * allocations apart (thin, dashed) where the card is drawn, what it
 * spilled to host memory as a band stacked on the thick line, each
 * process's (thin, one colour each, on the card where measured), the cap
 * (dashed red), the peak (a dot with its value), denials (red triangles)
 * and spills (purple diamonds) on the top edge; a legend on the right;
 * the command in the title. The same drawing code writes PNG (image
 * surface) and SVG (SVG surface).
 *
 * A million points are drawn as one pixel column at a time (the value
 * entering the column, its minimum, maximum and last value), so the path
 * stays as wide as the picture whatever the trace's length. Marks are drawn
 * once per pixel column and kind, and at most PL_DRAW_PROCS processes a
 * device (those with the highest peaks): what is drawn, and the time and
 * memory it takes, are bounded by the picture, not by the trace.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cairo.h>
#include <cairo-svg.h>

#include "common/compiler.h"
#include "common/size.h"
#include "common/text.h"
#include "report/plot.h"

#define W             1200.0
#define PANEL_H       380.0
#define TITLE_H       56.0
#define LEFT          96.0
#define RIGHT         300.0
#define TOP_PAD       34.0
#define BOTTOM        56.0
#define PL_DRAW_PROCS 32 /* process lines drawn a device */

struct rgb {
	double r, g, b;
};
static const struct rgb c_group = {0.10, 0.20, 0.45}, c_cap = {0.84, 0.15, 0.16},
                        c_peak = {1.00, 0.50, 0.05}, c_spill = {0.58, 0.40, 0.74},
                        c_grid = {0.88, 0.88, 0.88}, c_text = {0.10, 0.10, 0.10};
static const struct rgb palette[] = {{0.17, 0.63, 0.17}, {0.12, 0.47, 0.71}, {0.55, 0.34, 0.29},
                                     {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}, {0.74, 0.74, 0.13},
                                     {0.09, 0.75, 0.81}, {0.40, 0.76, 0.65}};

static void color(cairo_t *cr, struct rgb c)
{
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

struct panel {
	double x0, y0, w, h; /* plotting area */
	double tmax, ymax, unit;
	const char *unit_name;
};

static double px(const struct panel *p, double t)
{
	return p->x0 + (p->tmax > 0 ? t / p->tmax : 0) * p->w;
}

static double py(const struct panel *p, double v)
{
	return p->y0 + p->h - (p->ymax > 0 ? v / p->ymax : 0) * p->h;
}

/* A "nice" tick step: 1, 2 or 5 times a power of ten, about n per span. */
static double nice_step(double span, int n)
{
	double raw = span / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double align)
{
	cairo_text_extents_t e;
	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, x - e.x_advance * align, y);
	cairo_show_text(cr, s);
}

static void axes(cairo_t *cr, const struct panel *p, const char *label, const char *what)
{
	char buf[64];
	cairo_set_line_width(cr, 1);
	cairo_set_font_size(cr, 12);
	double ys = nice_step(p->ymax / p->unit, 5);
	for (double v = 0; v <= p->ymax / p->unit + 1e-9; v += ys) {
		double y = py(p, v * p->unit);
		color(cr, c_grid);
		cairo_move_to(cr, p->x0, y);
		cairo_line_to(cr, p->x0 + p->w, y);
		cairo_stroke(cr);
		color(cr, c_text);
		snprintf(buf, sizeof buf, "%g", v);
		text_at(cr, p->x0 - 8, y + 4, buf, 1.0);
	}
	double xs = nice_step(p->tmax > 0 ? p->tmax : 1, 8);
	for (double t = 0; t <= p->tmax + 1e-9; t += xs) {
		double x = px(p, t);
		color(cr, c_grid);
		cairo_move_to(cr, x, p->y0);
		cairo_line_to(cr, x, p->y0 + p->h);
		cairo_stroke(cr);
		color(cr, c_text);
		snprintf(buf, sizeof buf, "%g", t);
		text_at(cr, x, p->y0 + p->h + 16, buf, 0.5);
	}
	color(cr, c_text);
	cairo_rectangle(cr, p->x0, p->y0, p->w, p->h);
	cairo_stroke(cr);
	text_at(cr, p->x0 + p->w / 2, p->y0 + p->h + 36, "time (s)", 0.5);
	cairo_save(cr);
	cairo_move_to(cr, p->x0 - 58, p->y0 + p->h / 2);
	cairo_rotate(cr, -M_PI / 2);
	snprintf(buf, sizeof buf, "%s (%s)", what, p->unit_name);
	cairo_text_extents_t e;
	cairo_text_extents(cr, buf, &e);
	cairo_rel_move_to(cr, -e.x_advance / 2, 0);
	cairo_show_text(cr, buf);
	cairo_restore(cr);
	cairo_set_font_size(cr, 14);
	text_at(cr, p->x0, p->y0 - 10, label, 0.0);
}

/* A step line through the series, one pixel column at a time. */
static void step_line(cairo_t *cr, const struct panel *p, const struct pl_series *s)
{
	if (!s->n)
		return;
	double col = floor(px(p, s->t[0])), prev = 0, lo = s->v[0], hi = s->v[0], last = s->v[0];
	cairo_move_to(cr, px(p, 0), py(p, 0));
	cairo_line_to(cr, col, py(p, 0));
	for (size_t i = 0; i <= s->n; i++) {
		double c = i < s->n ? floor(px(p, s->t[i])) : -1;
		if (i < s->n && c == col) {
			lo = fmin(lo, s->v[i]);
			hi = fmax(hi, s->v[i]);
			last = s->v[i];
			continue;
		}
		/* Column col done: enter at prev, span lo..hi, leave at last. */
		cairo_line_to(cr, col, py(p, prev));
		cairo_line_to(cr, col, py(p, lo));
		cairo_line_to(cr, col, py(p, hi));
		cairo_line_to(cr, col, py(p, last));
		prev = last;
		if (i == s->n)
			break;
		col = c;
		lo = hi = last = s->v[i];
	}
	cairo_line_to(cr, px(p, p->tmax), py(p, prev));
	cairo_stroke(cr);
}

/* The value of a step series at time t (0 before its first point). */
static double value_at(const struct pl_series *s, double t)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s->v[lo - 1] : 0;
}

/* Spilled memory as a band stacked on the line `base`, one pixel column
 * at a time (its value where the column starts, and at most the largest
 * spill inside it, so that a short spill stays visible). */
static void spill_band(cairo_t *cr, const struct panel *p, const struct pl_series *base,
                       const struct pl_series *sp)
{
	int n = (int)p->w;
	double *top = malloc((size_t)(n + 1) * sizeof *top);
	if (!top || !sp->n) {
		free(top);
		return;
	}
	size_t k = 0;
	for (int i = 0; i <= n; i++) {
		double t0 = p->tmax * i / n, t1 = p->tmax * (i + 1) / n, v = value_at(sp, t0);
		while (k < sp->n && sp->t[k] < t0)
			k++;
		for (size_t j = k; j < sp->n && sp->t[j] < t1; j++)
			v = fmax(v, sp->v[j]);
		top[i] = value_at(base, t0) + v;
	}
	cairo_move_to(cr, p->x0, py(p, value_at(base, 0)));
	for (int i = 0; i <= n; i++)
		cairo_line_to(cr, p->x0 + i, py(p, top[i]));
	for (int i = n; i >= 0; i--)
		cairo_line_to(cr, p->x0 + i, py(p, value_at(base, p->tmax * i / n)));
	cairo_close_path(cr);
	cairo_set_source_rgba(cr, c_spill.r, c_spill.g, c_spill.b, 0.35);
	cairo_fill(cr);
	free(top);
}

static void legend_line(cairo_t *cr, double x, double *y, struct rgb c, double width, int dashed,
                        const char *label)
{
	color(cr, c);
	cairo_set_line_width(cr, width);
	if (dashed) {
		double d[] = {8, 5};
		cairo_set_dash(cr, d, 2, 0);
	}
	cairo_move_to(cr, x, *y - 4);
	cairo_line_to(cr, x + 28, *y - 4);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	color(cr, c_text);
	char buf[64];
	snprintf(buf, sizeof buf, "%.30s", label);
	text_at(cr, x + 36, *y, buf, 0);
	*y += 20;
}

static void triangle(cairo_t *cr, double x, double y)
{
	cairo_move_to(cr, x - 6, y - 10);
	cairo_line_to(cr, x + 6, y - 10);
	cairo_line_to(cr, x, y);
	cairo_close_path(cr);
	cairo_fill(cr);
}

static void diamond(cairo_t *cr, double x, double y)
{
	cairo_move_to(cr, x, y - 12);
	cairo_line_to(cr, x + 6, y - 6);
	cairo_line_to(cr, x, y);
	cairo_line_to(cr, x - 6, y - 6);
	cairo_close_path(cr);
	cairo_fill(cr);
}

/* A legend entry for n marks of one kind (0 denied, 1 spilled), if any. */
static void legend_mark(cairo_t *cr, double x, double *y, int spill, int n, const char *what)
{
	char buf[64];
	if (!n)
		return;
	color(cr, spill ? c_spill : c_cap);
	if (spill)
		diamond(cr, x + 14, *y);
	else
		triangle(cr, x + 14, *y);
	color(cr, c_text);
	snprintf(buf, sizeof buf, "%s (%d)", what, n);
	text_at(cr, x + 36, *y, buf, 0);
	*y += 20;
}

static double series_peak(const struct pl_series *s)
{
	double peak = 0;
	for (size_t i = 0; i < s->n; i++)
		peak = fmax(peak, s->v[i]);
	return peak;
}

struct ranked {
	size_t k;
	double peak;
};

static int by_peak(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	return x->peak < y->peak ? 1 : x->peak > y->peak ? -1 : (x->k > y->k) - (x->k < y->k);
}

/* Process series k is one of device d's lines (not allocations drawn on
 * the card instead). */
#define ON_DEV(t, k, d) ((t)->procs[k].dev == (d) && !(t)->procs[k].hidden)

/*
 * Marks in drawn[k] (k < t->nprocs) the processes of device d to draw: all
 * of them up to PL_DRAW_PROCS, else the PL_DRAW_PROCS with the highest
 * peaks. Returns how many processes device d has.
 */
static size_t pick_procs(const struct pl_trace *t, int d, unsigned char *drawn)
{
	size_t n = 0;
	for (size_t k = 0; k < t->nprocs; k++)
		n += ON_DEV(t, k, d);
	struct ranked *r = n > PL_DRAW_PROCS ? malloc(n * sizeof *r) : NULL;
	if (!r) {
		/* Few enough (or no memory to rank them): the first ones. */
		size_t m = 0;
		for (size_t k = 0; k < t->nprocs; k++)
			drawn[k] = ON_DEV(t, k, d) && m++ < PL_DRAW_PROCS;
		return n;
	}
	size_t m = 0;
	for (size_t k = 0; k < t->nprocs; k++) {
		drawn[k] = 0;
		if (ON_DEV(t, k, d))
			r[m++] = (struct ranked){.k = k, .peak = series_peak(&t->procs[k])};
	}
	qsort(r, m, sizeof *r, by_peak);
	for (size_t i = 0; i < PL_DRAW_PROCS; i++)
		drawn[r[i].k] = 1;
	free(r);
	return n;
}

/* The marks of device d, one per pixel column and kind, kept inside the
 * plot's width (a denial at the last instant is drawn whole). */
static void draw_marks(cairo_t *cr, const struct pl_trace *t, int d, const struct panel *p)
{
	unsigned char seen[2][(int)W + 1];
	memset(seen, 0, sizeof seen);
	for (size_t i = 0; i < t->nmarks; i++) {
		const struct pl_mark *m = &t->marks[i];
		if (m->dev != d)
			continue;
		double x = fmin(fmax(px(p, m->t), p->x0 + 6), p->x0 + p->w - 6);
		int col = (int)x;
		if (col < 0 || col > (int)W || seen[m->spill][col])
			continue;
		seen[m->spill][col] = 1;
		color(cr, m->spill ? c_spill : c_cap);
		if (m->spill)
			diamond(cr, x, p->y0);
		else
			triangle(cr, x, p->y0);
	}
}

static void draw_device(cairo_t *cr, const struct pl_trace *t, int d, double top,
                        unsigned char *drawn)
{
	/* The thick line is what the cap counted: on the card where the
	 * members measured it, else the allocations. */
	int on_card = t->card[d].n > 0;
	const struct pl_series *g = on_card ? &t->card[d] : &t->group[d], *cap = &t->cap[d];
	const struct pl_series *spl = &t->spilled[d];
	double capv = cap->n ? cap->v[cap->n - 1] : 0, peak = 0, tpeak = 0, ymax = capv;
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i] > peak) {
			peak = g->v[i];
			tpeak = g->t[i];
		}
	size_t nprocs = pick_procs(t, d, drawn);
	for (size_t k = 0; k < t->nprocs; k++)
		if (drawn[k])
			ymax = fmax(ymax, series_peak(&t->procs[k]));
	ymax = fmax(ymax, series_peak(&t->group[d]));
	/* The band: on the thick line, so its top is everything the run held. */
	double spmax = series_peak(spl);
	if (spmax > 0)
		for (size_t i = 0; i < spl->n; i++)
			ymax = fmax(ymax, value_at(g, spl->t[i]) + spmax);
	ymax = fmax(fmax(ymax, peak), 1024.0 * 1024) * 1.12;
	struct panel p = {.x0 = LEFT,
	                  .y0 = top + TOP_PAD,
	                  .w = W - LEFT - RIGHT,
	                  .h = PANEL_H - TOP_PAD - BOTTOM,
	                  .tmax = t->t_max > 0 ? t->t_max : 1,
	                  .ymax = ymax};
	int gib = ymax >= 1024.0 * 1024 * 1024;
	p.unit = gib ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
	p.unit_name = gib ? "GiB" : "MiB";
	char label[160];
	snprintf(label, sizeof label, "%s", t->dev_label[d][0] ? t->dev_label[d] : "GPU");
	if (!t->dev_label[d][0])
		snprintf(label, sizeof label, "GPU %d", d);
	axes(cr, &p, label, on_card ? "on the card" : "allocated");

	cairo_save(cr);
	cairo_rectangle(cr, p.x0, p.y0 - 14, p.w, p.h + 14);
	cairo_clip(cr);
	if (spmax > 0)
		spill_band(cr, &p, g, spl);
	/* The group's thick line first, its allocations apart (where the card
	 * is drawn), the processes' thin ones over them. */
	color(cr, c_group);
	cairo_set_line_width(cr, 3);
	step_line(cr, &p, g);
	if (on_card && t->group[d].n) {
		double dash[] = {3, 3};
		cairo_set_line_width(cr, 1.5);
		cairo_set_dash(cr, dash, 2, 0);
		step_line(cr, &p, &t->group[d]);
		cairo_set_dash(cr, NULL, 0, 0);
	}
	int pi = 0;
	for (size_t k = 0; k < t->nprocs; k++) {
		if (!drawn[k])
			continue;
		color(cr, palette[pi++ % (int)VR_ARRAY_LEN(palette)]);
		cairo_set_line_width(cr, 1.5);
		step_line(cr, &p, &t->procs[k]);
	}
	if (cap->n) {
		double dash[] = {8, 5};
		color(cr, c_cap);
		cairo_set_line_width(cr, 2);
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, p.x0, py(&p, capv));
		cairo_line_to(cr, p.x0 + p.w, py(&p, capv));
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
	}
	color(cr, c_peak);
	cairo_arc(cr, px(&p, tpeak), py(&p, peak), 6, 0, 2 * M_PI);
	cairo_fill(cr);
	cairo_restore(cr);
	draw_marks(cr, t, d, &p);
	char a[32], buf[96];
	color(cr, c_text);
	cairo_set_font_size(cr, 12);
	/* The peak and the cap never read the same unless they are. */
	int dg = vr_size_digits((uint64_t[]){(uint64_t)peak, (uint64_t)capv}, 2, 0);
	snprintf(buf, sizeof buf, "peak %s%s at %.2f s",
	         vr_format_size_digits((uint64_t)peak, dg, a, sizeof a),
	         on_card ? " on the card" : "", tpeak);
	double lx = px(&p, tpeak) + 10, ly = py(&p, peak) - 8;
	if (lx + 150 > p.x0 + p.w)
		lx = px(&p, tpeak) - 160;
	text_at(cr, lx, ly < p.y0 + 12 ? p.y0 + 12 : ly, buf, 0);

	/* Legend. */
	double lxl = p.x0 + p.w + 24, y = p.y0 + 10;
	legend_line(cr, lxl, &y, c_group, 3, 0, on_card ? "group on the card" : "group allocated");
	if (on_card && t->group[d].n) {
		double dash[] = {3, 3};
		color(cr, c_group);
		cairo_set_line_width(cr, 1.5);
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, lxl, y - 4);
		cairo_line_to(cr, lxl + 28, y - 4);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		color(cr, c_text);
		text_at(cr, lxl + 36, y, "group allocated", 0);
		y += 20;
	}
	if (spmax > 0) {
		cairo_set_source_rgba(cr, c_spill.r, c_spill.g, c_spill.b, 0.35);
		cairo_rectangle(cr, lxl, y - 10, 28, 10);
		cairo_fill(cr);
		color(cr, c_text);
		text_at(cr, lxl + 36, y, "spilled to host memory", 0);
		y += 20;
	}
	if (cap->n) {
		snprintf(buf, sizeof buf, "cap %s",
		         vr_format_size_digits((uint64_t)capv, dg, a, sizeof a));
		legend_line(cr, lxl, &y, c_cap, 2, 1, buf);
	}
	pi = 0;
	size_t shown = 0;
	for (size_t k = 0; k < t->nprocs && shown < 8; k++) {
		if (!drawn[k])
			continue;
		struct rgb c = palette[pi++ % (int)VR_ARRAY_LEN(palette)];
		/* "PID /long/path/cmd args": the PID, the command's name, its args. */
		const char *lab = t->procs[k].label, *sp = strchr(lab, ' ');
		size_t nl = 0;
		const char *name = sp ? vr_command_name(sp + 1, &nl) : lab;
		snprintf(buf, sizeof buf, "%.*s%.60s", sp ? (int)(sp - lab + 1) : 0, lab,
		         sp ? name : (lab[0] ? lab : "a process"));
		legend_line(cr, lxl, &y, c, 1.5, 0, buf);
		shown++;
	}
	if (nprocs > shown) {
		snprintf(buf, sizeof buf, "and %zu more processes", nprocs - shown);
		color(cr, c_text);
		text_at(cr, lxl + 36, y, buf, 0);
		y += 20;
	}
	color(cr, c_peak);
	cairo_arc(cr, lxl + 14, y - 4, 5, 0, 2 * M_PI);
	cairo_fill(cr);
	color(cr, c_text);
	text_at(cr, lxl + 36, y, "peak", 0);
	y += 20;
	int nden = 0, nsp = 0;
	for (size_t i = 0; i < t->nmarks; i++)
		if (t->marks[i].dev == d)
			*(t->marks[i].spill ? &nsp : &nden) += 1;
	legend_mark(cr, lxl, &y, 0, nden, "denied");
	legend_mark(cr, lxl, &y, 1, nsp, "spilled");
}

int pl_draw(const struct pl_trace *t, const char *out, char *err, size_t errlen)
{
	int ndev = 0, devs[PL_MAX_DEVS];
	for (int d = 0; d < PL_MAX_DEVS; d++) {
		int used = t->group[d].n > 0 || t->card[d].n > 0;
		for (size_t k = 0; k < t->nprocs && !used; k++)
			used = t->procs[k].dev == d;
		if (used)
			devs[ndev++] = d;
	}
	double h = TITLE_H + PANEL_H * (ndev ? ndev : 1);
	size_t len = strlen(out);
	int svg = len > 4 && !strcasecmp(out + len - 4, ".svg");
	int png = len > 4 && !strcasecmp(out + len - 4, ".png");
	if (!svg && !png) {
		vr_seterr(err, errlen, "-o %s: the picture's name must end in .svg or .png", out);
		return -1;
	}
	cairo_surface_t *s = svg ? cairo_svg_surface_create(out, W, h)
	                         : cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)h);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		vr_seterr(err, errlen, "cannot write %s: %s", out,
		          cairo_status_to_string(cairo_surface_status(s)));
		cairo_surface_destroy(s);
		return -1;
	}
	unsigned char *drawn = calloc(t->nprocs + 1, 1);
	if (!drawn) {
		vr_seterr(err, errlen, "out of memory");
		cairo_surface_destroy(s);
		return -1;
	}
	cairo_t *cr = cairo_create(s);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_font_size(cr, 18);
	color(cr, c_text);
	char title[600];
	snprintf(title, sizeof title, "vramctl: %s", t->command[0] ? t->command : "(trace)");
	/* Shortened to the picture's width, with an ellipsis. */
	for (size_t n = strlen(title); n > 12; n--) {
		cairo_text_extents_t e;
		cairo_text_extents(cr, title, &e);
		if (e.x_advance <= W - 40)
			break;
		memcpy(title + n - 4, "...", 4);
	}
	text_at(cr, 20, 34, title, 0);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	for (int i = 0; i < ndev; i++)
		draw_device(cr, t, devs[i], TITLE_H + PANEL_H * i, drawn);
	cairo_destroy(cr);
	free(drawn);
	int rc = 0;
	if (png && cairo_surface_write_to_png(s, out) != CAIRO_STATUS_SUCCESS) {
		vr_seterr(err, errlen, "cannot write %s", out);
		rc = -1;
	}
	cairo_surface_finish(s);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		vr_seterr(err, errlen, "cannot write %s: %s", out,
		          cairo_status_to_string(cairo_surface_status(s)));
		rc = -1;
	}
	cairo_surface_destroy(s);
	return rc;
}
