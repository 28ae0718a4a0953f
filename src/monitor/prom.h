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

#include "monitor/model.h"

void mon_prom_head(FILE *f, const char *name, const char *type, const char *help);
void mon_prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value);

/* A gauge's sample of model device i {gpu, uuid, then extra's pairs (NULL:
 * none, at most 4)}, its head first when *any is 0 (then set). */
void mon_prom_device(FILE *f, const struct mon_model *m, int i, const char *name, const char *help,
                     int *any, const char *const *extra, uint64_t v);
/* The same for a group device {group, gpu, uuid}. */
void mon_prom_group_dev(FILE *f, const struct mon_model *m, const struct mon_group *g,
                        const struct mon_group_dev *gd, const char *name, const char *help,
                        int *any, uint64_t v);

#endif /* VRAMCTL_MONITOR_PROM_H */
