/*
 * prom.h - the Prometheus writer the formatters share (prom.c): a metric's
 * HELP and TYPE lines, and one sample, labels given as a NULL-terminated
 * list of key, value pairs; a label whose value is "" is left out, values
 * are escaped. Pure, as format.c.
 */
#ifndef VRAMCTL_MONITOR_PROM_H
#define VRAMCTL_MONITOR_PROM_H

#include <stdint.h>
#include <stdio.h>

void mon_prom_head(FILE *f, const char *name, const char *type, const char *help);
void mon_prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value);

#endif /* VRAMCTL_MONITOR_PROM_H */
