/*
 * clock.h - the two clocks, in nanoseconds, as every part that times
 * something reads them: CLOCK_MONOTONIC for deadlines and durations,
 * CLOCK_REALTIME for "since when" shown to people (monitors). libc only:
 * the injected library uses it too.
 */
#ifndef VRAMCTL_CLOCK_H
#define VRAMCTL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t vr_clock_ns(clockid_t which)
{
	struct timespec ts;
	clock_gettime(which, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t vr_mono_ns(void)
{
	return vr_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t vr_real_ns(void)
{
	return vr_clock_ns(CLOCK_REALTIME);
}

#endif /* VRAMCTL_CLOCK_H */
