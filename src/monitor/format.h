/*
 * format.h - the monitor's pure formatters: a model in, text out.
 *
 * They read nothing but the model (no clock, no /proc, no environment), so a
 * fixed model always gives the same bytes; tests/monitor/golden/ holds the
 * expected text for fixed scenarios. Each returns 0, or -EIO when the stream
 * reported a write error.
 */
#ifndef VRAMCTL_MONITOR_FORMAT_H
#define VRAMCTL_MONITOR_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "monitor/model.h"
#include "monitor/prom.h" /* mon_prom_head, mon_prom_sample */

/* The readable table of `vramctl status`. */
int mon_format_table(FILE *f, const struct mon_model *m);

/* JSON (schema in man/vramctl-status.1). compact: one line, for --watch. */
int mon_format_json(FILE *f, const struct mon_model *m, int compact);

/* Prometheus text exposition format 0.0.4 (metrics in man/vramctl-export.1). */
int mon_format_prom(FILE *f, const struct mon_model *m);

/* HAMi's node-monitor series (format_hami.c), for `vramctl export --hami`. */
struct mon_hami_opts {
	const char *node; /* the node's name for HAMi's `node` label; NULL or "": left out */
};
int mon_format_hami(FILE *f, const struct mon_model *m, const struct mon_hami_opts *o);

/* "alive", "dead", "stale". */
const char *mon_state_name(int state);
/* A row's state as the table says it: "alive", "dead", ..., "uncapped",
 * "escaped", "alone", and for a live member "parked" or "waiting". */
const char *mon_proc_state_text(const struct mon_proc *p);

/* Why a process capped by books of its own (MON_P_ALONE) is alone, in its
 * own words; NULL for any other row. */
const char *mon_alone_why(const struct mon_model *m, const struct mon_proc *p);

#endif /* VRAMCTL_MONITOR_FORMAT_H */
