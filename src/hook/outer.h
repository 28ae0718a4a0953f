/*
 * outer.h - the outer groups this process holds beside its own (outer.c;
 * the jobs they come from: job.h). Each of its devices is added to every
 * outer group with that job's cap; every reserve is made in the outer
 * groups too, after its own group's, and refused (its own reserve given
 * back) when one of them has no room; releases and overhead charges follow.
 * So a process inside a capped job never passes the job's cap, whatever
 * cap its environment gave it (a nested `vramctl run --limit 8G` inside a
 * 1 GiB job), and the job's group counts it with its own members.
 *
 * An outer group that cannot be joined (damaged books, another user's) is
 * kept by this process alone, as its own group would be (books.c): the
 * job's cap then holds for this process alone, said once.
 */
#ifndef VRAMCTL_HOOK_OUTER_H
#define VRAMCTL_HOOK_OUTER_H

#include <stdint.h>

#include "hook/dev.h"

/* Joins the outer groups vr_job_outers names (books.c, with its own join). */
void vr_outer_join(void);

/* Adds d to every outer group (after its own books: books.c); sets
 * d->nouter. */
void vr_outer_device(struct vr_dev *d);

/* The outer groups' part of a reserve of bytes on d, after its own group
 * granted it: 0 when every outer group has room (then all hold it), else
 * -1 with *in_use the refusing group's use and nothing held anywhere but in
 * the caller's own group (the caller gives that back). quiet: as
 * vr_reserve_quiet. */
int vr__outer_reserve(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int quiet);
void vr__outer_release(struct vr_dev *d, uint64_t bytes);

/* This process's overhead charge on d, in every outer group too. */
void vr_outer_overhead(struct vr_dev *d, uint64_t bytes);

/* What the program is shown, within every outer group's cap: total and
 * free lowered to each one's cap and room. */
void vr_outer_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp);
uint64_t vr_outer_total(struct vr_dev *d, uint64_t total);

/* The last refusal of this thread was an outer group's: 1 and the line
 * said for it (the denial, with that group's cap and use), else 0. Forgets
 * it either way. */
int vr_outer_say_refused(struct vr_dev *d, uint64_t bytes, uint64_t in_use);
/* A refusal of this thread's own group: the flag vr_outer_say_refused
 * reads is cleared. */
void vr_outer_refusal_own(void);
/* 1 when this thread's last refusal on d was an outer group's (the flag
 * vr_outer_say_refused reads and forgets). */
int vr_outer_refused(const struct vr_dev *d);

#endif /* VRAMCTL_HOOK_OUTER_H */
