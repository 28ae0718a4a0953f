/*
 * top_history.h - `vramctl top`'s per-row history for the sparklines
 * (top_history.c).
 */
#ifndef VRAMCTL_CLI_TOP_HISTORY_H
#define VRAMCTL_CLI_TOP_HISTORY_H

#include "monitor/model.h"

#define HIST_LEN 24 /* samples kept per row */

struct hist {
	char key[256];
	float v[HIST_LEN]; /* on the card, fraction of cap (or of the GPU), oldest first */
	int n;
	unsigned seen;
};

struct history {
	struct hist *rows;
	int n, cap;
	unsigned tick;
};

/* The fraction a row's bar and sparkline show: what the card holds for it
 * (mon_proc.on_card), of the cap, or of the GPU for uncapped rows and caps
 * of "none". */
double row_fraction(const struct mon_model *m, const struct mon_proc *p);

/* Records one sample per row and forgets rows not seen for 60 samples. */
void history_sample(struct history *h, const struct mon_model *m);

/* A row's history, or NULL. */
const struct hist *history_of(struct history *h, const struct mon_proc *p);

void history_free(struct history *h);

#endif /* VRAMCTL_CLI_TOP_HISTORY_H */
