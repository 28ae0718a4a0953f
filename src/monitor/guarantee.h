/*
 * guarantee.h - guarantees on the card as the monitor shows them:
 * per group and device its guarantee and what it borrows past it, per
 * device the guarantees its book holds (any user's groups), their unused
 * part and the free memory nobody is guaranteed. guarantee_read.c fills
 * the devices from the device books; the rest (guarantee.c) is pure, as
 * format.c.
 */
#ifndef VRAMCTL_MONITOR_GUARANTEE_H
#define VRAMCTL_MONITOR_GUARANTEE_H

#include <stdio.h>

#include "common/json.h"
#include "monitor/model.h"

/* Reads the device book of every device of m and of every book in dir
 * (NULL: vr_devbook_dir) whose device m lacks (appended, without an NVML
 * index), fills the devices' guarantee fields (MON_DEV_GUAR) and calls
 * mon_guarantee_derive. A book that cannot be read leaves its device
 * without MON_DEV_GUAR and gives one note. 0, or -ENOMEM (m unchanged but
 * for devices already filled). */
int mon_guarantee_read(struct mon_model *m, const char *dir);

/* After the join and mon_card_figures, devices filled: each group device's
 * guarantee (its device's entry of the same group name and owner uid),
 * borrowed (on_card above it), each holder's in_registry, and each
 * device's unguaranteed_free (free less its unused guarantees, or 0). */
void mon_guarantee_derive(struct mon_model *m);

/* 1 when some device holds a guarantee: the views then show the groups'
 * GUARANTEE and BORROWED. */
int mon_guarantee_any(const struct mon_model *m);

/* A group device's GUARANTEE (borrowed 0) or BORROWED (1) cell, in buf
 * (32 bytes): "none" for no guarantee, "-" when its device's book was not
 * read. */
const char *mon_guarantee_text(const struct mon_model *m, const struct mon_group_dev *gd, char *buf,
                               int borrowed);
/* Device i's line (table, top): "GPU 0: guarantees 10 GiB (6 GiB unused);
 * unguaranteed free 3 GiB; held by: ga (uid 1000) 4 GiB, 2 GiB in use; ..."
 * in buf (cut to len; MON_GUARANTEE_LINE holds every holder), or NULL when
 * it has no guarantee or its book was not read. */
#define MON_GUARANTEE_LINE (256 + MON_MAX_GUARANTEES * (4 * VR_GROUP_NAME_MAX + 96))
const char *mon_guarantee_line(const struct mon_model *m, int i, char *buf, size_t len);
/* The table's lines: one per device with guarantees. */
void mon_guarantee_table(FILE *f, const struct mon_model *m);
/* A device's guaranteed_bytes, unused_guarantee_bytes,
 * unguaranteed_free_bytes and "guarantees" array. */
void mon_guarantee_json_dev(struct jw *w, const struct mon_device *d);
/* A group device's guarantee_bytes and borrowed_bytes. */
void mon_guarantee_json_group(struct jw *w, const struct mon_model *m,
                              const struct mon_group_dev *gd);
/* The Prometheus series (vramctl_group_guarantee_bytes, ...). */
void mon_guarantee_prom(FILE *f, const struct mon_model *m);

#endif /* VRAMCTL_MONITOR_GUARANTEE_H */
