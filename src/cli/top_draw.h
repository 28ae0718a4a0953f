/*
 * top_draw.h - drawing a frame of `vramctl top` with ncurses (top_draw.c).
 * Every frame is drawn from a struct mon_model (src/monitor/model.h), the
 * model `status` and `export` format: the collector thread fills its NVML
 * half, mon_collect_registry the rest.
 */
#ifndef VRAMCTL_CLI_TOP_DRAW_H
#define VRAMCTL_CLI_TOP_DRAW_H

#include "cli/top_history.h"
#include "monitor/model.h"

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

#endif /* VRAMCTL_CLI_TOP_DRAW_H */
