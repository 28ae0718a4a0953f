/*
 * run_report.c - built into libexec/vramctl-run only: the strong references
 * that bring `vramctl run --report/--trace`'s half (src/report, with json-c
 * and libdw) into that program. run.c refers to it weakly, so the vramctl
 * every job starts with links none of it (src/cli/module.mk).
 */
#include "report/report.h"

void *const vr_run_report_half[] = {(void *)rep_prepare, (void *)rep_finish};
