/*
 * top.h - the parts of `vramctl top` (internal to the CLI):
 *
 *   top_collector.c  the NVML collector thread (NVML is only ever called there)
 *   top_history.c    per-row history for the sparklines
 *   top_sort.c       the columns and the row order
 *   top_layout.c     fixed-width columns, pure (tested on fixed input)
 *   top_draw.c       drawing a model with ncurses
 *   top.c            options, the refresh loop and the keys
 *
 * Every frame is drawn from a struct mon_model (src/monitor/model.h), the
 * model `status` and `export` format: the collector thread fills its NVML
 * half, mon_collect_registry the rest.
 */
#ifndef VRAMCTL_CLI_TOP_H
#define VRAMCTL_CLI_TOP_H

#include <pthread.h>
#include <stddef.h>

#include "monitor/collect.h"
#include "monitor/model.h"

#define HIST_LEN 24 /* samples kept per row */
#define SPARK_W  16 /* samples shown (the newest) */
#define BAR_W    12

/* ---- collector (top_collector.c) */

struct collector {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int seq;                /* bumped at each publication */
	struct mon_model nv;    /* latest NVML half (devices, NVML rows, notes) */
	struct mon_sources src; /* the collector's own: NVML is touched by it alone */
	char nverr[256];
	double period;
	pthread_t thread;
	int running;
};

/* Starts the thread (loading NVML is its first job). Returns 0, or -1 when
 * no thread could be started (frames then show the registry alone). */
int collector_start(struct collector *c, double period);

/* A deep copy of the latest NVML half into m (empty); *seq gets the number
 * of publications so far (0: NVML has not answered yet). Returns 0 or
 * -ENOMEM. */
int collector_latest(struct collector *c, struct mon_model *m, int *seq);

/* Asks the thread to stop and detaches it: a thread stuck inside NVML is not
 * waited for (the process exits around it). */
void collector_stop(struct collector *c);

/* ---- history (top_history.c) */

struct hist {
	char key[256];
	float v[HIST_LEN]; /* fraction of cap (or of the GPU) in use, oldest first */
	int n;
	unsigned seen;
};

struct history {
	struct hist *rows;
	int n, cap;
	unsigned tick;
};

/* The in-use fraction a row's bar and sparkline show: of the cap, or of
 * the GPU for uncapped rows and caps of "none". */
double row_fraction(const struct mon_model *m, const struct mon_proc *p);

/* Records one sample per row and forgets rows not seen for 60 samples. */
void history_sample(struct history *h, const struct mon_model *m);

/* A row's history, or NULL. */
const struct hist *history_of(struct history *h, const struct mon_proc *p);

void history_free(struct history *h);

/* ---- columns and order (top_sort.c) */

enum col {
	C_PID,
	C_GPU,
	C_USER,
	C_GROUP,
	C_USED,
	C_CAP,
	C_PEAK,
	C_SPILL, /* host memory past the cap (--spill) */
	C_NVML,
	C_DENIED,
	C_CMD,
	NCOLS
};

struct col_def {
	const char *title;
	int key;   /* the sort key */
	int width; /* 0: the rest of the line */
};

extern const struct col_def top_cols[NCOLS];

/* Sorts rows (pointers into one model) by column col; numbers largest
 * first, names alphabetically, ties by PID; reverse turns it round. */
void sort_rows(const struct mon_proc **rows, int n, int col, int reverse);

/* ---- layout (top_layout.c) */

/*
 * Lays out one line of n cells in columns of fixed widths (characters; a
 * width of 0 takes the rest). A cell longer than its column is cut and ends
 * in '~', and one space always separates two columns, so cells never run
 * into each other. x[i] (when x is not NULL) gets column i's first
 * character. Writes at most len - 1 bytes and a NUL; returns the line's
 * length in bytes.
 */
size_t top_layout(const int *widths, int n, const char *const *cells, char *out, size_t len,
                  int *x);

/* ---- drawing (top_draw.c) */

struct ui {
	struct history hist;
	int sort_col;
	int reverse;
	char filter[64];
	int help;
	int color;
	int utf8;
	double delay;
};

/* Sets up colours (unless NO_COLOR) once the screen is open. */
void draw_init(struct ui *u);

/* Draws one frame of m into ncurses' virtual screen. */
void draw(struct ui *u, const struct mon_model *m);

#endif /* VRAMCTL_CLI_TOP_H */
