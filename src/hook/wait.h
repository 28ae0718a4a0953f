/*
 * wait.h - waiting for room instead of out-of-memory (wait.c;
 * --wait[=TIME], VRAMCTL_WAIT): an allocation its group's cap refused
 * waits until the group has room for it (the release that makes room
 * wakes it: registry.h, "Waiting for room"), or the time passes, or the
 * wait could never end. The policy asks here after a refusal (policy.c)
 * and applies the card's and the guarantees' checks to what it is given.
 */
#ifndef VRAMCTL_HOOK_WAIT_H
#define VRAMCTL_HOOK_WAIT_H

#include <stdint.h>

#include "hook/dev.h"
#include "hook/hook.h"

/* Why a wait ended without room (the denial line says it). */
enum vr_wait_end {
	VR_WAITED_GRANTED = 0,
	VR_WAITED_TIME,      /* the time passed */
	VR_WAITED_DEADLOCK,  /* every other live member waits too: none would free */
	VR_WAITED_ALONE,     /* the group has no other live member */
	VR_WAITED_TOO_BIG,   /* the request alone is more than the cap */
	VR_WAITED_OWN_BOOKS, /* this process keeps its own books: no other frees here */
	VR_WAITED_OTHER,     /* an outer group (a job's) or the guarantees kept refusing */
};

/* A wait: how it ended and how long it took (for the line, the report). */
struct vr_waited {
	enum vr_wait_end end;
	uint64_t ns;
};

/* The wait asked for (VRAMCTL_WAIT), in ns: 0 when allocations do not
 * wait. */
static inline uint64_t vr_wait_budget_ns(void)
{
	return vr_g.wait_ms * 1000000ull;
}

/*
 * Waits for room for bytes on d in its group's books until deadline_ns
 * (CLOCK_MONOTONIC): 0 with the bytes reserved there (as vr_books_reserve
 * grants them; outer groups included), -1 without (nothing held; w->end
 * says why). One thread of the process waits in the group at a time;
 * the others queue behind it, in their deadline. Never called with a lock
 * of the library's or the driver's held: the policy calls it before the
 * driver is asked anything.
 */
int vr_wait_room(struct vr_dev *d, uint64_t bytes, uint64_t deadline_ns, struct vr_waited *w);
/* The same in its own group's books only (a parked process's bytes
 * coming back: the job's groups still hold them). */
int vr_wait_room_own(struct vr_dev *d, uint64_t bytes, uint64_t deadline_ns, struct vr_waited *w);

/* The reason a wait ended, as the denial line says it (after "on GPU n"):
 * "" for VR_WAITED_TIME (the line starts "waited T for ..."). */
const char *vr_wait_why(enum vr_wait_end end);

#endif /* VRAMCTL_HOOK_WAIT_H */
