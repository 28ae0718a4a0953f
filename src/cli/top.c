/*
 * top.c - `vramctl top`: a live terminal view (ncurses) of every GPU and GPU
 * process against its cap: the options, the refresh loop and the keys. The
 * parts, each with its header:
 *
 *   top_collector.c  the NVML collector thread (NVML is only ever called there)
 *   top_history.c    per-row history for the sparklines
 *   top_sort.c       the columns and the row order
 *   top_layout.c     fixed-width columns, pure (tested on fixed input)
 *   top_draw.c       drawing a model with ncurses
 *
 * Two threads. The collector thread (top_collector.c) reads NVML at most
 * once a second (NVML calls can block for a long time on a sick driver) and
 * publishes its half of the model. The UI thread never calls NVML: at each
 * refresh it copies the latest NVML half, adds the registry's
 * (mon_collect_registry: a copy of small mapped files), and draws the model,
 * so the screen keeps moving even when NVML hangs. Each frame is drawn from
 * scratch into ncurses' virtual screen; ncurses sends only what changed.
 */
#include <getopt.h>
#include <locale.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/top_collector.h"
#include "cli/top_draw.h"
#include "cli/top_history.h"
#include "cli/top_sort.h"
#include "common/exit.h"
#include "monitor/collect.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
		mvaddnstr(LINES - 1, 0, "filter (user, container or group, empty for all): ", COLS);
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
	           "  --filter TEXT        show only rows whose user, container or group\n"
	           "                       contains TEXT\n"
	           "  --registry DIR       registry directory\n"
	           "\n"
	           "With NO_COLOR set (to anything but empty), no colours.\n");
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
	struct ui u = {.sort_col = C_CARD, .delay = 1.0};
	const char *registry = NULL;
	int ch;
	const char *word = "";
	optind = 1;
	while ((ch = cli_getopt(argc, argv, "+:d:f:r:h", opts, &word)) != -1) {
		switch (ch) {
		case 'd': {
			char *end;
			u.delay = strtod(optarg, &end);
			if (*end || !(u.delay >= 0.1) || u.delay > 3600) {
				fprintf(stderr, "vramctl: top: bad delay '%s' (seconds, >= 0.1)\n",
				        optarg);
				return VR_EXIT_ERROR;
			}
			break;
		}
		case 'f':
			snprintf(u.filter, sizeof(u.filter), "%s", optarg); /* truncated */
			break;
		case 'r':
			registry = optarg;
			break;
		case 'h':
			top_usage(stdout);
			return 0;
		default:
			return cli_option_error("top", ch, word);
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'", argv[optind]);

	setlocale(LC_ALL, "");
	const char *cs = setlocale(LC_CTYPE, NULL);
	u.utf8 = cs && (strstr(cs, "UTF-8") || strstr(cs, "utf8") || strstr(cs, "UTF8"));

	/* Static: a collector stuck in NVML outlives this function until exit.
	 * Even loading and initialising NVML happen in the collector: the
	 * screen never waits for NVML, not even for its first answer. */
	static struct collector col;

	/* A file or a pipe would get the screen's escape codes. */
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fprintf(stderr,
		        "vramctl: top: standard %s is not a terminal; for a file or a pipe use "
		        "'vramctl status' (or 'vramctl status --watch' for a stream of JSON "
		        "lines)\n",
		        isatty(STDOUT_FILENO) ? "input" : "output");
		return VR_EXIT_ERROR;
	}
	if (!initscr()) {
		fprintf(stderr, "vramctl: top: cannot open the terminal\n");
		return VR_EXIT_ERROR;
	}
	int have_thread = collector_start(&col, u.delay) == 0;

	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	draw_init(&u);
	set_escdelay(25);
	timeout(100);

	struct mon_sources reg = {.registry_dir = registry};
	double next = 0;
	int dirty = 1;
	struct mon_model m = {0};
	while (!stop_sig) {
		double t = now_s();
		if (t >= next) {
			/* A new frame: the latest NVML half plus the registry now. */
			mon_model_clear(&m);
			int seq = 0;
			int rc = collector_latest(&col, &m, &seq);
			if (rc == 0 && seq == 0)
				mon_model_note(&m, have_thread
				                       ? "waiting for NVML's first answer: GPU "
				                         "totals and uncapped processes not "
				                         "shown yet"
				                       : "NVML not read (no collector thread)");
			if (rc == 0 && mon_collect_registry(&reg, &m) == 0)
				history_sample(&u.hist, &m);
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
			if (k == top_cols[i].key) {
				u.sort_col = i;
				break;
			}
		/* KEY_RESIZE: ncurses has resized its screens; the redraw fits. */
	}
	endwin();
	mon_model_clear(&m);
	history_free(&u.hist);
	collector_stop(&col);
	return 0;
}
