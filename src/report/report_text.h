/*
 * report_text.h - the run's report as text (report_text.c), for stderr or
 * --report=FILE (docs/report.md, "The report").
 */
#ifndef VRAMCTL_REPORT_REPORT_TEXT_H
#define VRAMCTL_REPORT_REPORT_TEXT_H

#include <stdint.h>
#include <stdio.h>

#include "report/report_facts.h"

/* Writes the report of run r to f: ds per device (VR_REC_DEVS), the
 * command's exit status child_rc, the run's end t_end; sy symbolises call
 * sites (--stacks) or is NULL. */
void rep_text_report(const struct rep_view *r, FILE *f, const struct devsum *ds, int child_rc,
                     uint64_t t_end, struct rep_symbols *sy);

#endif /* VRAMCTL_REPORT_REPORT_TEXT_H */
