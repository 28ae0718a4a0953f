/*
 * knobs.c - the registry's bound on lock waits and its test-only knobs,
 * read from the environment once, at the first join (knobs.h).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "registry/knobs.h"

_Atomic long vr_stop_in_lock_countdown;
uint64_t vr_lock_bound_ns = 5000000000ull; /* 5 s */

uint64_t vr_test_lane_quantum;

void vr_read_test_env(void)
{
	const char *s = getenv("VRAMCTL_TEST_STOP_IN_LOCK");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			atomic_store(&vr_stop_in_lock_countdown, n);
	}
	s = getenv("VRAMCTL_TEST_LANE_QUANTUM");
	if (s && *s)
		vr_test_lane_quantum = strtoull(s, NULL, 10);
	s = getenv("VRAMCTL_TEST_LOCK_BOUND_MS");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			vr_lock_bound_ns = (uint64_t)n * 1000000u;
	}
}
