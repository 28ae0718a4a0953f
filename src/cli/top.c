/*
 * top.c - `vramctl top`: a live terminal view (ncurses) of every GPU and GPU
 * process against its cap.
 *
 * Two threads. A collector thread reads NVML at most once a second (NVML
 * calls can block for a long time on a sick driver) and publishes its half
 * of the model under a mutex. The UI thread never calls NVML: at each
 * refresh it copies the latest NVML half, reads the registry (cheap: a copy
 * of small mapped files) and merges them, so the screen keeps moving even
 * when NVML hangs. Layout is redrawn from scratch each time into ncurses'
 * virtual screen; ncurses sends only what changed.
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <ncurses.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/size.h"
#include "cli/commands.h"
#include "common/text.h"
#include "monitor/collect.h"
#include "monitor/format.h"
#include "registry/registry.h"

#define HIST_LEN 24 /* samples kept per row */
#define SPARK_W  16 /* samples shown (the newest) */
#define BAR_W    12

/* ---- the NVML collector thread ---------------------------------------- */

struct collector {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int seq;                /* bumped at each publication */
	struct mon_model nv;    /* latest NVML half (devices, NVML rows, notes) */
	struct mon_sources src; /* the collector's own: NVML is touched by it alone */
	char nverr[256];
	double period;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *collector_main(void *arg)
{
	struct collector *c = arg;
	mon_nvml_open(NULL, &c->src.nvml, c->nverr, sizeof(c->nverr));
	c->src.nvml_error = c->nverr;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		pthread_mutex_unlock(&c->mu);
		struct mon_model m = {0};
		int rc = mon_collect_nvml(&c->src, &m);
		pthread_mutex_lock(&c->mu);
		if (rc == 0) {
			mon_model_clear(&c->nv);
			c->nv = m;
			c->seq++;
		}
		/* At most once a second, whatever the screen's refresh. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		double p = c->period < 1.0 ? 1.0 : c->period;
		dl.tv_sec += (time_t)p;
		dl.tv_nsec += (long)((p - (double)(time_t)p) * 1e9);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &dl) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- per-process history ---------------------------------------------- */

struct hist {
	char key[256];
	float v[HIST_LEN]; /* fraction of cap (or of the GPU) in use, oldest first */
	int n;
	unsigned seen;
};

struct ui {
	struct hist *hist;
	int nhist, caphist;
	unsigned tick;
	int sort_col;
	int reverse;
	char filter[64];
	int help;
	int color;
	int utf8;
	double delay;
};

static void row_key(const struct mon_proc *p, char *buf, size_t len)
{
	snprintf(buf, len, "%d/%d/%s/%s", (int)p->host_pid, (int)p->ns_pid, p->uuid, p->group);
}

static struct hist *hist_for(struct ui *u, const char *key)
{
	for (int i = 0; i < u->nhist; i++)
		if (!strcmp(u->hist[i].key, key))
			return &u->hist[i];
	if (u->nhist == u->caphist) {
		int ncap = u->caphist ? u->caphist * 2 : 64;
		struct hist *h = realloc(u->hist, sizeof(*h) * (size_t)ncap);
		if (!h)
			return NULL;
		u->hist = h;
		u->caphist = ncap;
	}
	struct hist *h = &u->hist[u->nhist++];
	memset(h, 0, sizeof(*h));
	mon_copy(h->key, sizeof(h->key), key);
	return h;
}

static double row_fraction(const struct mon_model *m, const struct mon_proc *p)
{
	if (p->valid & MON_P_CAPPED) {
		uint64_t cap = p->cap;
		if (cap == MON_NO_CAP && (p->valid & MON_P_DEVICE) &&
		    (m->devs[p->device].valid & MON_DEV_MEMORY))
			cap = m->devs[p->device].total;
		return cap && cap != MON_NO_CAP ? (double)p->in_use / (double)cap : 0;
	}
	if ((p->valid & MON_P_NVML_USED) && (p->valid & MON_P_DEVICE) &&
	    (m->devs[p->device].valid & MON_DEV_MEMORY) && m->devs[p->device].total)
		return (double)p->nvml_used / (double)m->devs[p->device].total;
	return 0;
}

/* Records one sample per row and forgets rows gone for a while. */
static void hist_sample(struct ui *u, const struct mon_model *m)
{
	u->tick++;
	for (int i = 0; i < m->nprocs; i++) {
		char key[256];
		row_key(&m->procs[i], key, sizeof(key));
		struct hist *h = hist_for(u, key);
		if (!h)
			continue;
		if (h->n == HIST_LEN) {
			memmove(h->v, h->v + 1, sizeof(h->v[0]) * (HIST_LEN - 1));
			h->n--;
		}
		h->v[h->n++] = (float)row_fraction(m, &m->procs[i]);
		h->seen = u->tick;
	}
	for (int i = 0; i < u->nhist;)
		if (u->tick - u->hist[i].seen > 60)
			u->hist[i] = u->hist[--u->nhist];
		else
			i++;
}

/* ---- columns and sorting ----------------------------------------------- */

enum col { C_PID, C_GPU, C_USER, C_GROUP, C_USED, C_CAP, C_PEAK, C_NVML, C_DENIED, C_CMD, NCOLS };

static const struct {
	const char *title;
	int key;
} cols[NCOLS] = {
    [C_PID] = {"PID", 'p'},     [C_GPU] = {"GPU", 'g'},     [C_USER] = {"USER", 'u'},
    [C_GROUP] = {"GROUP", 'G'}, [C_USED] = {"IN USE", 'm'}, [C_CAP] = {"CAP", 'c'},
    [C_PEAK] = {"PEAK", 'k'},   [C_NVML] = {"NVML", 'n'},   [C_DENIED] = {"DENIED", 'd'},
    [C_CMD] = {"COMMAND", 'C'},
};

static const struct mon_model *sort_model;
static int sort_col_g, sort_rev_g;

static uint64_t used_of(const struct mon_proc *p)
{
	return (p->valid & MON_P_CAPPED)      ? p->in_use
	       : (p->valid & MON_P_NVML_USED) ? p->nvml_used
	                                      : 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct mon_proc *x = *(const struct mon_proc *const *)a;
	const struct mon_proc *y = *(const struct mon_proc *const *)b;
	int r = 0;
	switch (sort_col_g) {
	case C_PID:
		r = cmp_u64((uint64_t)x->host_pid, (uint64_t)y->host_pid);
		if (!r)
			r = cmp_u64((uint64_t)x->ns_pid, (uint64_t)y->ns_pid);
		break;
	case C_GPU:
		r = cmp_u64((uint64_t)(unsigned)x->device, (uint64_t)(unsigned)y->device);
		break;
	case C_USER:
		r = strcmp(x->user, y->user);
		break;
	case C_GROUP:
		r = strcmp(x->group, y->group);
		break;
	case C_USED:
		r = cmp_u64(used_of(x), used_of(y));
		break;
	case C_CAP:
		r = cmp_u64((x->valid & MON_P_CAPPED) ? x->cap : 0,
		            (y->valid & MON_P_CAPPED) ? y->cap : 0);
		break;
	case C_PEAK:
		r = cmp_u64(x->peak, y->peak);
		break;
	case C_NVML:
		r = cmp_u64(x->nvml_used, y->nvml_used);
		break;
	case C_DENIED:
		r = cmp_u64(x->denied_count, y->denied_count);
		break;
	default:
		r = strcmp(x->command, y->command);
		break;
	}
	if (!r)
		r = cmp_u64((uint64_t)x->host_pid, (uint64_t)y->host_pid);
	/* Numbers read best largest first; names alphabetically. */
	int numeric = sort_col_g == C_USED || sort_col_g == C_CAP || sort_col_g == C_PEAK ||
	              sort_col_g == C_NVML || sort_col_g == C_DENIED;
	if (numeric)
		r = -r;
	return sort_rev_g ? -r : r;
}

/* ---- drawing ----------------------------------------------------------- */

enum { PAIR_OK = 1, PAIR_WARN, PAIR_BAD, PAIR_HEAD, PAIR_DIM };

/* Draws text, escaped: much of it comes from other processes (command
 * lines, from the books and from /proc). */
static void put(int y, int x, const char *s)
{
	char safe[1024];
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	mvaddnstr(y, x, vr_text_escape(safe, sizeof(safe), s), COLS - x);
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

static const char *sz(uint64_t v, char *buf, size_t len)
{
	return vr_format_size(v, buf, len);
}

static int row_matches(const struct ui *u, const struct mon_proc *p)
{
	if (!u->filter[0])
		return 1;
	return strstr(p->user, u->filter) ||
	       ((p->valid & MON_P_CAPPED) && strstr(p->group, u->filter));
}

static void draw_help(void)
{
	static const char *const lines[] = {
	    "vramctl top - keys",
	    "",
	    "  h ?      this help (any key closes it)",
	    "  q        quit",
	    "  p g u G  sort by PID, GPU, user, group",
	    "  m c k    sort by in use, cap, peak",
	    "  n d C    sort by NVML usage, denied count, command",
	    "  < >      sort by the previous / next column",
	    "  r        reverse the order",
	    "  / f      filter by user or group (empty: all)",
	    "  Esc      clear the filter",
	    "",
	    "Bars: '#' in use, '|' the cap (GPUs) or the peak (processes).",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));
	for (int i = 0; i < n && i + 1 < LINES; i++) {
		move(i + 1, 0);
		clrtoeol();
		put(i + 1, 1, lines[i]);
	}
}

static void draw(struct ui *u, const struct mon_model *m)
{
	char a[32], b[32], c[32], line[512];
	erase();
	if (COLS < 20 || LINES < 4) {
		put(0, 0, "vramctl top: terminal too small");
		return;
	}
	int y = 0;
	snprintf(line, sizeof(line),
	         "vramctl top  %d GPU%s  %d process row%s  sort: %s%s  %s%s%s  h: help", m->ndevs,
	         m->ndevs == 1 ? "" : "s", m->nprocs, m->nprocs == 1 ? "" : "s",
	         cols[u->sort_col].title, u->reverse ? " (reversed)" : "",
	         u->filter[0] ? "filter: " : "", u->filter, u->filter[0] ? "" : "");
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
			snprintf(line, sizeof(line), "GPU %s %.24s %s/%s caps %s%s", idx,
			         (d->valid & MON_DEV_NAME) ? d->name : d->uuid,
			         sz(d->used, a, sizeof(a)), sz(d->total, b, sizeof(b)),
			         sz(d->caps_sum, c, sizeof(c)),
			         d->overcommitted ? " OVERCOMMITTED" : "");
		else
			snprintf(line, sizeof(line), "GPU %s %.40s memory unknown, caps %s", idx,
			         d->uuid, sz(d->caps_sum, c, sizeof(c)));
		int bw = COLS / 3;
		if (bw > 40)
			bw = 40;
		if (COLS < 50)
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
	}
	if (m->ndevs == 0 && y < LINES - 1)
		put(y++, 0, "No GPU known.");
	y++;

	/* Process rows, filtered and sorted. */
	const struct mon_proc **rows = malloc(sizeof(*rows) * (size_t)(m->nprocs + 1));
	int n = 0;
	for (int i = 0; rows && i < m->nprocs; i++)
		if (row_matches(u, &m->procs[i]))
			rows[n++] = &m->procs[i];
	sort_model = m;
	sort_col_g = u->sort_col;
	sort_rev_g = u->reverse;
	if (rows && n > 1)
		qsort(rows, (size_t)n, sizeof(*rows), cmp_proc);

	/* Header: the sort column carries a marker. */
	static const int widths[NCOLS] = {7, 3, 8, 10, 8, 8, 8, 8, 7, 0};
	int x = 0;
	ui_attr_on(u, PAIR_HEAD, A_BOLD);
	if (y < LINES)
		move(y, 0);
	for (int cI = 0; cI < NCOLS && y < LINES; cI++) {
		char t[32];
		snprintf(t, sizeof(t), "%s%s", cols[cI].title,
		         cI == u->sort_col ? (u->reverse ? "^" : "v") : "");
		put(y, x, t);
		if (cI == C_DENIED) {
			x += widths[cI] + 1;
			put(y, x, "USE/CAP");
			x += BAR_W + 1;
			put(y, x, "HISTORY");
			x += SPARK_W + 1;
		} else {
			x += widths[cI] + 1;
		}
	}
	ui_attr_off(u, PAIR_HEAD, A_BOLD);
	y++;
	for (int r = 0; r < n && y < LINES; r++, y++) {
		const struct mon_proc *p = rows[r];
		int capped = !!(p->valid & MON_P_CAPPED);
		char cells[NCOLS][160];
		if (p->valid & MON_P_HOST_PID)
			snprintf(cells[C_PID], 160, "%d", (int)p->host_pid);
		else
			snprintf(cells[C_PID], 160, "ns:%d", (int)p->ns_pid);
		if ((p->valid & MON_P_DEVICE) && (m->devs[p->device].valid & MON_DEV_INDEX))
			snprintf(cells[C_GPU], 160, "%d", m->devs[p->device].index);
		else
			snprintf(cells[C_GPU], 160, "-");
		snprintf(cells[C_USER], 160, "%.9s", (p->valid & MON_P_USER) ? p->user : "-");
		snprintf(cells[C_GROUP], 160, "%.12s", capped ? p->group : "(uncapped)");
		snprintf(cells[C_USED], 160, "%s", capped ? sz(p->in_use, a, sizeof(a)) : "-");
		snprintf(cells[C_CAP], 160, "%s",
		         !capped                ? "-"
		         : p->cap == MON_NO_CAP ? "none"
		                                : sz(p->cap, a, sizeof(a)));
		snprintf(cells[C_PEAK], 160, "%s", capped ? sz(p->peak, a, sizeof(a)) : "-");
		snprintf(cells[C_NVML], 160, "%s",
		         (p->valid & MON_P_NVML_USED) ? sz(p->nvml_used, a, sizeof(a))
		         : (p->valid & MON_P_NVML)    ? "unknown"
		                                      : "-");
		snprintf(cells[C_DENIED], 160, "%s", "-");
		if (capped)
			snprintf(cells[C_DENIED], 160, "%llu", (unsigned long long)p->denied_count);
		if (capped && p->state != MON_PROC_ALIVE)
			snprintf(cells[C_CMD], 160, "[%s] %s", mon_state_name(p->state),
			         p->command);
		else
			snprintf(cells[C_CMD], 160, "%s",
			         (p->valid & MON_P_COMMAND) ? p->command : "-");
		int pair = capped && p->state != MON_PROC_ALIVE ? PAIR_DIM : 0;
		ui_attr_on(u, pair, 0);
		x = 0;
		for (int cI = 0; cI < NCOLS; cI++) {
			put(y, x, cells[cI]);
			x += widths[cI] + 1;
			if (cI == C_DENIED) {
				double frac = row_fraction(m, p);
				double peak = -1;
				if (capped && p->cap != MON_NO_CAP && p->cap)
					peak = (double)p->peak / (double)p->cap;
				int bp = frac > 1 ? PAIR_BAD : frac > 0.9 ? PAIR_WARN : PAIR_OK;
				if (x + BAR_W <= COLS)
					draw_bar(u, y, x, BAR_W, frac > 1 ? 1 : frac,
					         peak > 1 ? 1 : peak, bp);
				x += BAR_W + 1;
				char key[256];
				row_key(p, key, sizeof(key));
				draw_spark(u, y, x, SPARK_W, hist_for(u, key));
				x += SPARK_W + 1;
			}
		}
		ui_attr_off(u, pair, 0);
	}
	if (n == 0 && y < LINES)
		put(y, 0, u->filter[0] ? "No process matches the filter." : "No GPU process.");
	free(rows);
}

/* ---- the filter prompt ------------------------------------------------- */

static void prompt_filter(struct ui *u)
{
	char buf[sizeof(u->filter)] = "";
	size_t n = 0;
	timeout(-1);
	for (;;) {
		move(LINES - 1, 0);
		clrtoeol();
		put(LINES - 1, 0, "filter (user or group, empty for all): ");
		addnstr(buf, (int)n);
		refresh();
		int ch = getch();
		if (ch == '\n' || ch == KEY_ENTER || ch == '\r')
			break;
		if (ch == 27) { /* Esc: leave the filter as it was */
			timeout(100);
			return;
		}
		if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n > 0)
			buf[--n] = '\0';
		else if (ch >= 32 && ch < 127 && n + 1 < sizeof(buf)) {
			buf[n++] = (char)ch;
			buf[n] = '\0';
		}
	}
	memcpy(u->filter, buf, sizeof(buf));
	timeout(100);
}

/* ---- main --------------------------------------------------------------- */

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static void top_usage(FILE *f)
{
	fprintf(f, "usage: vramctl top [-d SECONDS] [--filter TEXT] [--registry DIR]\n"
	           "\n"
	           "Live view of every GPU and GPU process against its cap. Keys: h or "
	           "? for\n"
	           "help, q to quit. NVML is read at most once a second, in the "
	           "background.\n"
	           "\n"
	           "  -d, --delay SECONDS  refresh period (default 1, at least 0.1)\n"
	           "  --filter TEXT        show only rows whose user or group contains "
	           "TEXT\n"
	           "  --registry DIR       registry directory\n"
	           "\n"
	           "NO_COLOR set: no colours.\n");
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"delay", required_argument, NULL, 'd'},
	    {"filter", required_argument, NULL, 'f'},
	    {"registry", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ui u = {.sort_col = C_USED, .delay = 1.0};
	const char *registry = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+d:f:r:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': {
			char *end;
			u.delay = strtod(optarg, &end);
			if (*end || !(u.delay >= 0.1) || u.delay > 3600) {
				fprintf(stderr, "vramctl: top: bad delay '%s' (seconds, >= 0.1)\n",
				        optarg);
				return 125;
			}
			break;
		}
		case 'f':
			mon_copy(u.filter, sizeof(u.filter), optarg);
			break;
		case 'r':
			registry = optarg;
			break;
		case 'h':
			top_usage(stdout);
			return 0;
		default:
			top_usage(stderr);
			return 125;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vramctl: top: unexpected argument '%s'\n", argv[optind]);
		return 125;
	}

	setlocale(LC_ALL, "");
	const char *cs = setlocale(LC_CTYPE, NULL);
	u.utf8 = cs && (strstr(cs, "UTF-8") || strstr(cs, "utf8") || strstr(cs, "UTF8"));

	/* Static: a collector stuck in NVML outlives this function until exit.
	 * Even loading and initialising NVML happen in the collector: the
	 * screen never waits for NVML, not even for its first answer. */
	static struct collector col;
	col.period = u.delay;
	pthread_mutex_init(&col.mu, NULL);
	pthread_cond_init(&col.cv, NULL);

	if (!initscr()) {
		fprintf(stderr, "vramctl: top: cannot open the terminal\n");
		return 125;
	}
	pthread_t th;
	int have_thread = pthread_create(&th, NULL, collector_main, &col) == 0;

	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	const char *nc = getenv("NO_COLOR");
	u.color = !(nc && *nc) && has_colors();
	if (u.color) {
		start_color();
		use_default_colors();
		init_pair(PAIR_OK, COLOR_GREEN, -1);
		init_pair(PAIR_WARN, COLOR_YELLOW, -1);
		init_pair(PAIR_BAD, COLOR_RED, -1);
		init_pair(PAIR_HEAD, COLOR_CYAN, -1);
		init_pair(PAIR_DIM, COLOR_MAGENTA, -1);
	}
	set_escdelay(25);
	timeout(100);

	char regdir[256] = "";
	if (registry)
		mon_copy(regdir, sizeof(regdir), registry);
	else
		vr_default_dir(regdir, sizeof(regdir));

	double next = 0;
	int dirty = 1;
	struct mon_model m = {0};
	while (!stop_sig) {
		double t = now_s();
		if (t >= next) {
			/* A new frame: the latest NVML half plus the registry now. */
			mon_model_clear(&m);
			pthread_mutex_lock(&col.mu);
			int rc = mon_model_copy(&m, &col.nv);
			int seq = col.seq;
			pthread_mutex_unlock(&col.mu);
			if (rc == 0 && seq == 0)
				mon_model_note(&m, have_thread
				                       ? "waiting for NVML's first answer: GPU "
				                         "totals and uncapped processes not "
				                         "shown yet"
				                       : "NVML not read (no collector thread)");
			if (rc == 0) {
				mon_copy(m.registry_dir, sizeof(m.registry_dir), regdir);
				struct vramctl_snapshot *snap = NULL;
				int src = vramctl_snapshot_take(regdir, &snap);
				if (mon_merge_registry(&m, src == 0 ? snap : NULL, src, NULL) < 0)
					mon_model_clear(&m);
				if (snap)
					vramctl_snapshot_free(snap);
				hist_sample(&u, &m);
			}
			next = t + u.delay;
			dirty = 1;
		}
		if (dirty) {
			draw(&u, &m);
			refresh();
			dirty = 0;
		}
		int wait_ms = (int)((next - now_s()) * 1000);
		timeout(wait_ms < 10 ? 10 : wait_ms > 1000 ? 1000 : wait_ms);
		int k = getch();
		if (k == ERR)
			continue;
		dirty = 1;
		if (u.help && k != KEY_RESIZE) {
			u.help = 0;
			if (k != 'q')
				continue;
		}
		if (k == 'q' || k == 'Q')
			break;
		if (k == 'h' || k == '?') {
			u.help = 1;
			continue;
		}
		if (k == '/' || k == 'f') {
			prompt_filter(&u);
			continue;
		}
		if (k == 27) {
			u.filter[0] = '\0';
			continue;
		}
		if (k == 'r') {
			u.reverse = !u.reverse;
			continue;
		}
		if (k == '<' || k == KEY_LEFT) {
			u.sort_col = (u.sort_col + NCOLS - 1) % NCOLS;
			continue;
		}
		if (k == '>' || k == KEY_RIGHT) {
			u.sort_col = (u.sort_col + 1) % NCOLS;
			continue;
		}
		for (int i = 0; i < NCOLS; i++)
			if (k == cols[i].key) {
				u.sort_col = i;
				break;
			}
		/* KEY_RESIZE: ncurses has resized its screens; the redraw fits. */
	}
	endwin();
	mon_model_clear(&m);
	free(u.hist);
	if (have_thread) {
		pthread_mutex_lock(&col.mu);
		col.stop = 1;
		pthread_cond_signal(&col.cv);
		pthread_mutex_unlock(&col.mu);
		/* A collector stuck inside NVML is not waited for: exiting ends it. */
		pthread_detach(th);
	}
	return 0;
}
