/*
 * plot.h - `vramctl plot TRACE -o OUT.svg|OUT.png`: a picture of a trace
 * written by `vramctl run --trace` (docs/report.md, "The plot").
 */
#ifndef VRAMCTL_REPORT_PLOT_H
#define VRAMCTL_REPORT_PLOT_H

#include <stddef.h>
#include <stdint.h>

#define PL_MAX_DEVS  16
#define PL_MAX_PROCS 4096 /* processes kept from one trace; later ones are skipped */

struct pl_series {
	long pid;
	int dev;
	int card;   /* a process's on-card counter ("GPU n on card"), else its allocations */
	int hidden; /* its allocations, where its on-card counter is drawn instead */
	char label[200];
	double *t, *v; /* seconds, bytes */
	size_t n, cap;
};

struct pl_mark {
	double t;
	int dev;
	int spill; /* 0 denied, 1 spill */
	double bytes;
};

struct pl_trace {
	char command[512];
	double t_max;
	struct pl_series group[PL_MAX_DEVS];   /* the group's allocations per device ("in use") */
	struct pl_series card[PL_MAX_DEVS];    /* on the card: allocations + overhead ("on card") */
	struct pl_series spilled[PL_MAX_DEVS]; /* host memory served past the cap */
	struct pl_series cap[PL_MAX_DEVS];
	char dev_label[PL_MAX_DEVS][96];
	struct pl_series *procs; /* per process and device */
	size_t nprocs, procs_cap;
	struct pl_mark *marks;
	size_t nmarks, mark_cap;
	size_t events;
	size_t skipped; /* events whose values no trace of vramctl holds (not finite, absurd) */
	long cut_line;  /* >0: the trace ends early after this many whole lines (its writer was
	                   killed) */
};

/* Reads a trace (streamed line by line when it is vramctl's own layout,
 * else parsed whole). Returns 0, or -1 with a one-line reason in err. A
 * trace cut short is read up to its cut (t->cut_line says where); events
 * with absurd values are skipped and counted (t->skipped). Ends in time and
 * memory bounded by the file's size on any input. */
int pl_read(const char *path, struct pl_trace *t, char *err, size_t errlen);
void pl_free(struct pl_trace *t);
/* Draws it to out (.svg or .png). Returns 0, or -1 with a reason. */
int pl_draw(const struct pl_trace *t, const char *out, char *err, size_t errlen);

#endif /* VRAMCTL_REPORT_PLOT_H */
