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
/* Test-only: every device's lane quantum (VRAMCTL_TEST_LANE_QUANTUM), 0: by the cap. */
extern uint64_t vr_test_lane_quantum;
/* Reads the three from the environment (at the first join). */
void vr_read_test_env(void);

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
