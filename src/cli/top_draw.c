/*
 * top_draw.c - one frame of `vramctl top` from a model, into ncurses'
 * virtual screen (see top_draw.h): a line per GPU with a bar of its memory, then
 * the process rows in fixed-width columns (top_layout.c).
 */
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_draw.h"
#include "cli/top_history.h"
#include "cli/top_layout.h"
#include "cli/top_sort.h"
#include "common/size.h"
#include "common/text.h"
#include "monitor/card.h"
#include "monitor/format.h"
#include "monitor/guarantee.h"

#define SPARK_W 16 /* samples shown (the newest) */
#define BAR_W   12
#define MIN_CMD 12 /* COMMAND's least width before optional columns go */

/* top_layout over the columns shown only; xs[i] of a hidden one is -1. */
static void layout_shown(const int *widths, const int *shown, int n, const char *const *texts,
                         char *out, size_t len, int *xs)
{
	int w[32], x[32], map[32], m = 0;
	const char *t[32];

	for (int i = 0; i < n && m < 32; i++) {
		xs[i] = -1;
		if (!shown[i])
			continue;
		w[m] = widths[i];
		t[m] = texts[i];
		map[m++] = i;
	}
	top_layout(w, m, t, out, len, x);
	for (int k = 0; k < m; k++)
		xs[map[k]] = x[k];
}

enum { PAIR_OK = 1, PAIR_WARN, PAIR_BAD, PAIR_HEAD, PAIR_DIM };

/* Draws text, escaped: much of it comes from other processes (command
 * lines, from the books and from /proc). */
static void put(int y, int x, const char *s)
{
	char safe[1024], cut[1024];
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	/* Cut at the screen's edge with the cells' mark, never silently. */
	mvaddstr(y, x, top_cut(vr_text_escape(safe, sizeof(safe), s), COLS - x, cut, sizeof(cut)));
}

static void ui_attr_on(struct ui *u, int pair, int extra)
{
	if (u->color && pair)
		attron(COLOR_PAIR(pair));
	if (extra)
		attron(extra);
}

static void ui_attr_off(struct ui *u, int pair, int extra)
{
	if (u->color && pair)
		attroff(COLOR_PAIR(pair));
	if (extra)
		attroff(extra);
}

/* A bar of width w: filled to frac, a marker at mark (< 0: none). */
static void draw_bar(struct ui *u, int y, int x, int w, double frac, double mark, int pair)
{
	if (w < 3 || y >= LINES || x + w > COLS)
		return;
	int fill = (int)(frac * (w - 2) + 0.5);
	if (fill > w - 2)
		fill = w - 2;
	int mk = mark >= 0 ? (int)(mark * (w - 2) + 0.5) : -1;
	if (mk > w - 3)
		mk = w - 3;
	mvaddch(y, x, '[');
	for (int i = 0; i < w - 2; i++) {
		int on = i < fill;
		if (on)
			ui_attr_on(u, pair, u->color ? A_REVERSE : 0);
		if (i == mk)
			addch(on ? '|' : '|');
		else
			addch(on ? (u->color ? ' ' : '#') : '.');
		if (on)
			ui_attr_off(u, pair, u->color ? A_REVERSE : 0);
	}
	addch(']');
}

static void draw_spark(struct ui *u, int y, int x, int w, const struct hist *h)
{
	static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
	                                     "\u2585", "\u2586", "\u2587", "\u2588"};
	static const char ascii[] = "_.-~=+*#";
	if (!h || y >= LINES)
		return;
	int start = h->n > w ? h->n - w : 0;
	move(y, x);
	for (int i = start; i < h->n && x + (i - start) < COLS; i++) {
		float v = h->v[i];
		int lvl = (int)(v * 7.0f + 0.5f);
		if (lvl < 0)
			lvl = 0;
		if (lvl > 7)
			lvl = 7;
		if (u->utf8)
			addstr(blocks[lvl]);
		else
			addch((chtype)(unsigned char)ascii[lvl]);
	}
}

static int row_matches(const struct ui *u, const struct mon_proc *p)
{
	if (!u->filter[0])
		return 1;
	return strstr(p->user, u->filter) || strstr(p->container_id, u->filter) ||
	       ((p->valid & MON_P_CAPPED) && strstr(p->group, u->filter));
}

static void draw_help(void)
{
	static const char *const lines[] = {
	    "vramctl top - keys",
	    "",
	    "  h ?      this help (any key closes it)",
	    "  q        quit",
	    "  p g u    sort by PID, GPU, user",
	    "  i G      sort by container, group",
	    "  a m o    sort by allocated, on card, overhead",
	    "  c k S    sort by cap, peak, spilled",
	    "  n d C    sort by NVML usage, denied count, command",
	    "  < >      sort by the previous / next column",
	    "  r        reverse the order",
	    "  / f      filter by user, container or group (empty: all)",
	    "  Esc      clear the filter",
	    "",
	    "Bars: '#' used (GPUs) or on the card (processes), '|' the cap (GPUs)",
	    "or the peak (processes).",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));
	for (int i = 0; i < n && i + 1 < LINES; i++) {
		move(i + 1, 0);
		clrtoeol();
		put(i + 1, 1, lines[i]);
	}
}

void draw(struct ui *u, const struct mon_model *m)
{
	char a[32], b[32], c[32], e[32], line[512];
	erase();
	if (COLS < 20 || LINES < 4) {
		put(0, 0, "vramctl top: terminal too small");
		return;
	}
	int y = 0;
	/* Process rows, filtered and sorted: the header counts the ones shown
	 * (of how many, under a filter). */
	const struct mon_proc **rows = malloc(sizeof(*rows) * (size_t)(m->nprocs + 1));
	int n = 0;
	for (int i = 0; rows && i < m->nprocs; i++)
		if (row_matches(u, &m->procs[i]))
			rows[n++] = &m->procs[i];
	if (rows)
		sort_rows(rows, n, u->sort_col, u->reverse);
	char of[32] = "";
	if (u->filter[0])
		snprintf(of, sizeof(of), " of %d", m->nprocs);
	snprintf(line, sizeof(line),
	         "vramctl top  %d GPU%s  %d%s process row%s  sort: %s%s  %s%s  h: help", m->ndevs,
	         m->ndevs == 1 ? "" : "s", n, of, (u->filter[0] ? m->nprocs : n) == 1 ? "" : "s",
	         top_cols[u->sort_col].title, u->reverse ? " (reversed)" : "",
	         u->filter[0] ? "filter: " : "", u->filter);
	ui_attr_on(u, PAIR_HEAD, A_BOLD);
	put(y++, 0, line);
	ui_attr_off(u, PAIR_HEAD, A_BOLD);
	for (int i = 0; i < m->nnotes && y < LINES - 1; i++) {
		snprintf(line, sizeof(line), "note: %s", m->notes[i]);
		ui_attr_on(u, PAIR_WARN, 0);
		put(y++, 0, line);
		ui_attr_off(u, PAIR_WARN, 0);
	}
	if (u->help) {
		draw_help();
		free(rows);
		return;
	}

	/* GPUs: a bar of NVML's used memory with the groups' caps marked
	 * (cumulatively: where the caps' sum ends). */
	for (int i = 0; i < m->ndevs && y < LINES - 1; i++) {
		const struct mon_device *d = &m->devs[i];
		char idx[16];
		if (d->valid & MON_DEV_INDEX)
			snprintf(idx, sizeof(idx), "%d", d->index);
		else
			snprintf(idx, sizeof(idx), "-");
		int mem = !!(d->valid & MON_DEV_MEMORY);
		if (mem)
			snprintf(line, sizeof(line), "GPU %s %.24s %s/%s caps %s%s%s%s", idx,
			         (d->valid & MON_DEV_NAME) ? d->name : d->uuid,
			         vr_format_size(d->used, a, sizeof(a)),
			         vr_format_size(d->total, b, sizeof(b)),
			         vr_format_size(d->caps_sum, c, sizeof(c)),
			         d->spilled ? " spilled " : "",
			         d->spilled ? vr_format_size(d->spilled, e, sizeof(e)) : "",
			         d->overcommitted ? " OVERCOMMITTED" : "");
		else
			snprintf(line, sizeof(line), "GPU %s %.40s memory unknown, caps %s", idx,
			         d->uuid, vr_format_size(d->caps_sum, c, sizeof(c)));
		int bw = COLS / 3;
		if (bw > 40)
			bw = 40;
		/* The bar goes right of the text, never over it. */
		if (COLS < 50 || (int)strlen(line) + 1 > COLS - bw - 1)
			bw = 0;
		put(y, 0, line);
		if (bw && mem && d->total) {
			int x = COLS - bw - 1;
			double frac = (double)d->used / (double)d->total;
			double cap = d->ncapped ? (double)d->caps_sum / (double)d->total : -1;
			if (cap > 1)
				cap = 1;
			int pair = d->overcommitted ? PAIR_BAD : frac > 0.9 ? PAIR_WARN : PAIR_OK;
			draw_bar(u, y, x, bw, frac, cap, pair);
		}
		y++;
		/* Its guarantees, cut at the screen's edge. */
		if (y < LINES - 1 && mon_guarantee_line(m, i, line, sizeof(line)))
			put(y++, 2, line);
	}
	if (m->ndevs == 0 && y < LINES - 1)
		put(y++, 0, "No GPU known.");
	/* Groups over their cap on the card (their members' overhead grew past
	 * it): a line each, with the reason. */
	for (int i = 0; i < m->ngroups; i++)
		for (int j = 0; j < m->groups[i].ndev && y < LINES - 1; j++) {
			const struct mon_group_dev *gd = &m->groups[i].dev[j];
			char why[256], gpu[16];
			if (!gd->over_cap)
				continue;
			int idx = mon_model_gpu_index(m, gd->device, 1);
			if (idx >= 0)
				snprintf(gpu, sizeof(gpu), "%d", idx);
			else
				snprintf(gpu, sizeof(gpu), "-");
			snprintf(line, sizeof(line), "group %s on GPU %s: %s; %s",
			         m->groups[i].name, gpu, mon_over_cap_reason(gd, why, sizeof(why)),
			         mon_over_cap_effect(gd));
			ui_attr_on(u, PAIR_BAD, A_BOLD);
			put(y++, 0, line);
			ui_attr_off(u, PAIR_BAD, A_BOLD);
		}
	y++;

	/* The process columns, with the bar and the sparkline after DENIED. */
	enum { L_BAR = C_DENIED + 1, L_SPARK, L_CMD, NL };
	int widths[NL], xs[NL];
	const char *texts[NL];
	char cells[NL][224];
	for (int cI = 0; cI <= C_DENIED; cI++)
		widths[cI] = top_cols[cI].width;
	widths[L_BAR] = BAR_W;
	widths[L_SPARK] = SPARK_W;
	widths[L_CMD] = 0;
	for (int i = 0; i < NL; i++)
		texts[i] = cells[i];
	/* A narrow terminal drops the optional columns, least useful first, so
	 * that COMMAND keeps at least MIN_CMD characters. */
	static const int drop[] = {L_SPARK, C_NVML, L_BAR, C_SPILL,  C_OVER,
	                           C_ALLOC, C_PEAK, C_CTR, C_DENIED, C_USER};
	/* CONTAINER only where some row is in a container. */
	int shown[NL], need = MIN_CMD, ctr = 0;
	for (int r = 0; r < n; r++)
		ctr |= rows[r]->container_id[0] != '\0';
	for (int i = 0; i < NL; i++) {
		shown[i] = i != C_CTR || ctr;
		need += shown[i] ? widths[i] + (i < L_CMD) : 0;
	}
	for (size_t k = 0; k < VR_ARRAY_LEN(drop) && need > COLS; k++) {
		if (!shown[drop[k]])
			continue;
		shown[drop[k]] = 0;
		need -= widths[drop[k]] + 1;
	}

	/* Header: the sort column carries a marker. */
	for (int cI = 0; cI < NCOLS; cI++)
		snprintf(cells[cI == C_CMD ? L_CMD : cI], sizeof(cells[0]), "%s%s",
		         top_cols[cI].title, cI == u->sort_col ? (u->reverse ? "^" : "v") : "");
	snprintf(cells[L_BAR], sizeof(cells[0]), "USE/CAP");
	snprintf(cells[L_SPARK], sizeof(cells[0]), "HISTORY");
	layout_shown(widths, shown, NL, texts, line, sizeof(line), xs);
	ui_attr_on(u, PAIR_HEAD, A_BOLD);
	put(y++, 0, line);
	ui_attr_off(u, PAIR_HEAD, A_BOLD);
	for (int r = 0; r < n && y < LINES; r++, y++) {
		const struct mon_proc *p = rows[r];
		int capped = !!(p->valid & MON_P_CAPPED);
		size_t cl = sizeof(cells[0]);
		if (p->valid & MON_P_HOST_PID)
			snprintf(cells[C_PID], cl, "%d", (int)p->host_pid);
		else
			snprintf(cells[C_PID], cl, "ns:%d", (int)p->ns_pid);
		if ((p->valid & MON_P_DEVICE) && (m->devs[p->device].valid & MON_DEV_INDEX))
			snprintf(cells[C_GPU], cl, "%d", m->devs[p->device].index);
		else
			snprintf(cells[C_GPU], cl, "-");
		/* Text from other processes is escaped before the layout
		 * measures it, so the columns hold what is drawn. */
		vr_text_escape(cells[C_USER], cl, (p->valid & MON_P_USER) ? p->user : "-");
		snprintf(cells[C_CTR], cl, "%.12s", p->container_id[0] ? p->container_id : "-");
		int escaped = !!(p->valid & MON_P_ESCAPED);
		vr_text_escape(cells[C_GROUP], cl, capped || escaped ? p->group : "(uncapped)");
		int oncard = !!(p->valid & MON_P_ON_CARD), dg = mon_proc_digits(p);
		snprintf(cells[C_ALLOC], cl, "%s",
		         capped && oncard ? vr_format_size_digits(p->allocated, dg, a, sizeof(a))
		                          : "-");
		snprintf(cells[C_CARD], cl, "%s",
		         oncard ? vr_format_size_digits(p->on_card, dg, a, sizeof(a)) : "-");
		snprintf(cells[C_OVER], cl, "%s",
		         capped && oncard
		             ? vr_format_size_digits(p->card_overhead, dg, a, sizeof(a))
		             : "-");
		snprintf(cells[C_CAP], cl, "%s",
		         !capped                ? "-"
		         : p->cap == MON_NO_CAP ? "none"
		                                : vr_format_size_digits(p->cap, dg, a, sizeof(a)));
		snprintf(cells[C_PEAK], cl, "%s",
		         capped ? vr_format_size_digits(p->peak, dg, a, sizeof(a)) : "-");
		snprintf(cells[C_SPILL], cl, "%s",
		         capped ? vr_format_size(p->spilled, a, sizeof(a)) : "-");
		snprintf(cells[C_NVML], cl, "%s",
		         (p->valid & MON_P_NVML_USED) ? vr_format_size(p->nvml_used, a, sizeof(a))
		         : (p->valid & MON_P_NVML)    ? "unknown"
		                                      : "-");
		snprintf(cells[C_DENIED], cl, "%s", "-");
		if (capped)
			snprintf(cells[C_DENIED], cl, "%llu", (unsigned long long)p->denied_count);
		cells[L_BAR][0] = cells[L_SPARK][0] = '\0';
		char cmd[sizeof(cells[0]) - 128]; /* room for "[state] [counting] " */
		vr_text_escape(cmd, sizeof(cmd), (p->valid & MON_P_COMMAND) ? p->command : "-");
		char state[48] = "", counting[48] = "", sz[32];
		if (capped && p->state != MON_PROC_ALIVE)
			snprintf(state, sizeof(state), "[%s] ", mon_state_name(p->state));
		else if (capped && p->parked) /* its memory on the host */
			snprintf(state, sizeof(state), "[parked %s] ",
			         vr_format_size(p->parked_bytes, sz, sizeof(sz)));
		else if (capped && p->wait_bytes) /* --wait */
			snprintf(state, sizeof(state), "[waiting for %s] ",
			         vr_format_size(p->wait_bytes, sz, sizeof(sz)));
		else if (p->valid & MON_P_ALONE) /* its cap holds for it alone */
			snprintf(state, sizeof(state), "[own books] ");
		else if (escaped)
			snprintf(state, sizeof(state), "[escaped] ");
		/* Where its cap counts allocations only, ON CARD is not what the
		 * cap counts: the row says so. */
		if (capped && p->counting != VRAMCTL_COUNTING_CARD)
			snprintf(counting, sizeof(counting), "[%s] ",
			         mon_counting_text(p->counting));
		snprintf(cells[L_CMD], cl, "%s%s%s", state, counting, cmd);
		int pair = capped && p->state != MON_PROC_ALIVE ? PAIR_DIM : 0;
		ui_attr_on(u, pair, 0);
		layout_shown(widths, shown, NL, texts, line, sizeof(line), xs);
		put(y, 0, line);
		double frac = row_fraction(m, p);
		double peak = -1;
		if (capped && p->cap != MON_NO_CAP && p->cap)
			peak = (double)p->peak / (double)p->cap;
		int bp = frac > 1 ? PAIR_BAD : frac > 0.9 ? PAIR_WARN : PAIR_OK;
		if (shown[L_BAR] && xs[L_BAR] + BAR_W <= COLS)
			draw_bar(u, y, xs[L_BAR], BAR_W, frac > 1 ? 1 : frac, peak > 1 ? 1 : peak,
			         bp);
		if (shown[L_SPARK])
			draw_spark(u, y, xs[L_SPARK], SPARK_W, history_of(&u->hist, p));
		ui_attr_off(u, pair, 0);
	}
	if (n == 0 && y < LINES)
		put(y, 0, u->filter[0] ? "No process matches the filter." : "No GPU process.");
	free(rows);
}

void draw_init(struct ui *u)
{
	const char *nc = getenv("NO_COLOR");
	u->color = !(nc && *nc) && has_colors();
	if (u->color) {
		start_color();
		use_default_colors();
		init_pair(PAIR_OK, COLOR_GREEN, -1);
		init_pair(PAIR_WARN, COLOR_YELLOW, -1);
		init_pair(PAIR_BAD, COLOR_RED, -1);
		init_pair(PAIR_HEAD, COLOR_CYAN, -1);
		init_pair(PAIR_DIM, COLOR_MAGENTA, -1);
	}
}
