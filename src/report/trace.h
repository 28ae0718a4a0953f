/*
 * trace.h - the run's memory timeline in Chrome trace-event JSON
 * (docs/report.md): drained from the members' rings while the run lasts,
 * written one event per line, bounded on disk by rotation.
 */
#ifndef VRAMCTL_REPORT_TRACE_H
#define VRAMCTL_REPORT_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "report/members.h"

/* Chrome trace "process" ids of the devices: GPU n is VR_TRACE_DEV_PID + n. */
#define VR_TRACE_DEV_PID 1000000000

struct rep_trace;

/* Takes over fd (opened by the caller to check the path early). max: bytes
 * on disk for FILE and FILE.1 together (0: no bound). */
struct rep_trace *rep_trace_new(int fd, const char *path, uint64_t max, uint64_t t0,
                                const char *command);
/* Drains every member's ring, in time order across members (members is
 * shared with the caller's thread: call under the caller's lock). A member
 * that is gone gives its memory back in the counters at the time it went
 * (rep_member_gone; now: the time of this drain). Returns 0 or -1 (a write
 * failed; said). */
int rep_trace_drain(struct rep_trace *t, struct rep_members *ms, uint64_t now);
/* A member's end: its "process exit" event, with how it ended in words. */
void rep_trace_end(struct rep_trace *t, struct rep_member *m, uint64_t when, const char *how);
/* The group's peaks on device d as the trace drew them, in time order
 * across members: of allocations (*alloc) and on the card (*card: 0 when no
 * member measured its overhead). 0 when the trace never saw d. */
int rep_trace_peaks(const struct rep_trace *t, int d, uint64_t *alloc, uint64_t *card);
/* Writes the end of the document and closes. Returns 0 or -1. Frees t. */
int rep_trace_close(struct rep_trace *t);

#endif /* VRAMCTL_REPORT_TRACE_H */
