/*
 * timing.h - what the start-up benchmarks share (start_bench.c,
 * preload_bench.c): the monotonic clock in ns, and sorting samples.
 */
#ifndef VRAMCTL_BENCH_TIMING_H
#define VRAMCTL_BENCH_TIMING_H

#include <time.h>

static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* qsort's comparison of doubles, smallest first. */
static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#endif /* VRAMCTL_BENCH_TIMING_H */
