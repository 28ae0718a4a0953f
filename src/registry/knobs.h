/*
 * knobs.h - the bound on waits for a live lock holder and the registry's
 * test-only knobs, read from the environment at the first join (knobs.c).
 */
#ifndef VRAMCTL_REGISTRY_KNOBS_H
#define VRAMCTL_REGISTRY_KNOBS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/compiler.h"

/* Test-only: VRAMCTL_TEST_STOP_IN_LOCK=N (read at the first join). */
extern _Atomic long vr_stop_in_lock_countdown;
/* The longest wait for the lock on a live holder (VRAMCTL_TEST_LOCK_BOUND_MS). */
extern uint64_t vr_lock_bound_ns;
/* The longest a waiter for room sleeps before it looks for dead members
 * again (wait.c; VRAMCTL_TEST_WAIT_SLICE_MS: tests make it long, so that
 * a wait that ends in time was woken by the release, not the slice). */
extern uint64_t vr_wait_slice_ns;
/* Test-only: every device's lane quantum (VRAMCTL_TEST_LANE_QUANTUM), 0: by the cap. */
extern uint64_t vr_test_lane_quantum;
/* Test-only: the largest block every device's lanes serve
 * (VRAMCTL_TEST_LANE_REACH, at least the quantum), 0: by the cap. */
extern uint64_t vr_test_lane_reach;
/* Test-only: each member's serving thread works in its program's
 * descriptor table (VRAMCTL_TEST_SERVE_SHARED=1), as where the kernel
 * gives it none of its own (serve.c). */
extern int vr_test_serve_shared;
/* Reads the six from the environment (at the first join). */
void vr_read_test_env(void);

/*
 * The waits of one call share one bound: a join or a denial
 * that waits for the lock, then for a slot's operation in flight, then for
 * the lock again, waits vr_lock_bound_ns in all, not that much each. An
 * entry point that may wait more than once starts the call's clock with
 * vr_call_begin and stops it with vr_call_end(what begin returned); nested
 * calls share the outermost one's. A wait outside any call has its own.
 */
uint64_t vr_call_begin(void);
void vr_call_end(uint64_t was);
/* When a wait that starts at now must give up: the call's deadline, but
 * never sooner than VR_WAIT_FLOOR_NS from now (a wait after the budget is
 * spent still gives a member in the middle of a few stores its chance). */
#define VR_WAIT_FLOOR_NS 10000000ull /* 10 ms */
uint64_t vr_wait_deadline(uint64_t now);
/* Past VR_WAIT_SAY_NS of waiting (the call's, else this wait's since
 * wait_t0), returns 1 once per call (once per wait outside a call, with
 * *said its flag): the waiter then says what it waits for. */
#define VR_WAIT_SAY_NS 1000000000ull /* 1 s */
int vr_wait_say_due(uint64_t wait_t0, uint64_t now, int *said);

/* Test-only (VRAMCTL_TEST_STOP_IN_LOCK=N): the Nth call stops the process
 * (SIGSTOP). Called inside every locked section that writes the books and
 * inside every lock-free reserve and release, between their writes to the
 * total and to the slot word (books.c): the windows a death must survive. */
static inline void vr_test_stop_point(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_stop_in_lock_countdown, memory_order_relaxed) >
	                0) &&
	    atomic_fetch_sub(&vr_stop_in_lock_countdown, 1) == 1)
		raise(SIGSTOP);
}

#endif /* VRAMCTL_REGISTRY_KNOBS_H */
