/*
 * top_sort.h - `vramctl top`'s columns and row order (top_sort.c).
 */
#ifndef VRAMCTL_CLI_TOP_SORT_H
#define VRAMCTL_CLI_TOP_SORT_H

#include "monitor/model.h"

enum col {
	C_PID,
	C_GPU,
	C_USER,
	C_CTR, /* container: the first 12 digits of its ID */
	C_GROUP,
	C_ALLOC, /* allocated through vramctl */
	C_CARD,  /* on the card: the sort by default */
	C_OVER,  /* on the card less allocated: context, modules, driver use */
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

#endif /* VRAMCTL_CLI_TOP_SORT_H */
