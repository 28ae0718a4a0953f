/*
 * knobs.c - the registry's bound on lock waits and its test-only knobs,
 * read from the environment once, at the first join, and the clock that
 * makes all the waits of one call share that bound (knobs.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "registry/knobs.h"
#include "registry/util.h"

_Atomic long vr_stop_in_lock_countdown;
uint64_t vr_lock_bound_ns = 5000000000ull; /* 5 s */
uint64_t vr_wait_slice_ns = 250000000ull;  /* 250 ms */

uint64_t vr_test_lane_quantum;
uint64_t vr_test_lane_reach;
int vr_test_serve_shared;

void vr_read_test_env(void)
{
	const char *s = secure_getenv("VRAMCTL_TEST_STOP_IN_LOCK");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			atomic_store(&vr_stop_in_lock_countdown, n);
	}
	s = secure_getenv("VRAMCTL_TEST_LANE_QUANTUM");
	if (s && *s)
		vr_test_lane_quantum = strtoull(s, NULL, 10);
	s = secure_getenv("VRAMCTL_TEST_LANE_REACH");
	if (s && *s)
		vr_test_lane_reach = strtoull(s, NULL, 10);
	s = secure_getenv("VRAMCTL_TEST_SERVE_SHARED");
	vr_test_serve_shared = s && !strcmp(s, "1");
	s = secure_getenv("VRAMCTL_TEST_WAIT_SLICE_MS");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			vr_wait_slice_ns = (uint64_t)n * 1000000u;
	}
	s = secure_getenv("VRAMCTL_TEST_LOCK_BOUND_MS");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			vr_lock_bound_ns = (uint64_t)n * 1000000u;
	}
}

/* ---- one bound for all the waits of a call */

static _Thread_local uint64_t call_t0; /* 0: no call running */
static _Thread_local int call_said;

uint64_t vr_call_begin(void)
{
	uint64_t was = call_t0;
	if (!was) {
		call_t0 = vr_now_ns();
		call_said = 0;
	}
	return was;
}

void vr_call_end(uint64_t was)
{
	call_t0 = was;
}

uint64_t vr_wait_deadline(uint64_t now)
{
	uint64_t end = (call_t0 ? call_t0 : now) + vr_lock_bound_ns;
	return end > now + VR_WAIT_FLOOR_NS ? end : now + VR_WAIT_FLOOR_NS;
}

int vr_wait_say_due(uint64_t wait_t0, uint64_t now, int *said)
{
	uint64_t start = call_t0 ? call_t0 : wait_t0;
	int *flag = call_t0 ? &call_said : said;
	if (*flag || now - start < VR_WAIT_SAY_NS)
		return 0;
	*flag = 1;
	return 1;
}
