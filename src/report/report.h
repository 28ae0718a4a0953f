/*
 * report.h - `vramctl run --report[=FILE] [--stacks] [--trace FILE]`: what
 * the CLI does around the command (docs/report.md).
 *
 *   rep_prepare   before the command: opens the outputs (an unwritable path
 *                 is an error before anything runs), makes the run's private
 *                 record directory, sets the contract (VRAMCTL_RECORD_DIR,
 *                 VRAMCTL_RECORD), becomes a child subreaper (so orphaned
 *                 members' exit statuses come back to vramctl) and starts
 *                 the trace's drain thread;
 *   rep_finish    after the command: reaps orphans, drains, writes the
 *                 trace's end and the report, removes the directory.
 */
#ifndef VRAMCTL_REPORT_REPORT_H
#define VRAMCTL_REPORT_REPORT_H

#include <stdint.h>
#include <sys/types.h>

#include "registry/registry.h"
#include "report/report_facts.h"

struct rep_opts {
	int report;              /* --report */
	const char *report_path; /* --report=FILE (NULL: text on stderr) */
	int stacks;              /* --stacks */
	const char *trace_path;  /* --trace FILE */
	uint64_t trace_max;      /* --trace-max SIZE: bytes on disk, both files together */
};

struct rep_run;

/* Before rep_finish: a process of the run that ended while vramctl waited
 * for the command (an orphan it reaped): how it ended is in the report. */
void rep_reaped(struct rep_run *r, pid_t pid, int status);

#define REP_ESCAPED_MAX 64
/* Before rep_finish: one such process, listed in the report (the first
 * REP_ESCAPED_MAX). */
void rep_escaped(struct rep_run *r, const struct rep_escapee *e);

/* reg: the CLI's membership of the run's group (NULL: none), read for the
 * count of cap changes so far (those after it are the run's). Returns the
 * run's state, or NULL after a message (the caller exits VR_EXIT_ERROR). */
struct rep_run *rep_prepare(const struct rep_opts *o, int argc, char *const argv[], vr_member *reg);

/* After the command ended: child (0: it could not be started) and its wait
 * status, exit_rc the exit status vramctl gives for it (126 or 127 for a
 * command never started), the CLI's membership (for the group's caps in
 * force at the end, the caps changed while it ran, and peaks; may be NULL). Returns 0, or -1 after
 * a one-line message (the report or trace could not be written; the caller keeps the command's
 * status). Frees r. */
int rep_finish(struct rep_run *r, pid_t child, int wstatus, int exit_rc, vr_member *m);

#endif /* VRAMCTL_REPORT_REPORT_H */
