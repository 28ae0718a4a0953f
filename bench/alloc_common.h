/*
 * alloc_common.h - what the alloc+free benchmarks share (alloc_bench.c,
 * alloc_group_bench.c): the clock, the context, one checked pair, the
 * warm-up, n threads at once, and the library beside the program.
 */
#ifndef VRAMCTL_BENCH_ALLOC_COMMON_H
#define VRAMCTL_BENCH_ALLOC_COMMON_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define PAIRS 200000
#define SIZE  4096

static CUcontext ctx;
static size_t block_size = SIZE; /* bytes of each pair's block */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* One cuMemAlloc_v2 + cuMemFree_v2 pair of block_size bytes; a failure
 * ends the benchmark. */
static inline void pair(void)
{
	CUdeviceptr p;
	if (cuMemAlloc_v2(&p, block_size) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS) {
		fprintf(stderr, "alloc bench: driver call failed\n");
		exit(1);
	}
}

static int warmup = 1000; /* pairs; fewer where a pair is slow (a real driver) */

/* The calling thread on the context, warmed up. */
static void thread_start(void)
{
	cuCtxSetCurrent(ctx);
	for (int i = 0; i < warmup; i++)
		pair();
}

/* Mean of fn's ns per pair over n threads at once (fn writes a double). */
static double run_threads(int n, void *(*fn)(void *))
{
	pthread_t t[8];
	double ns[8], sum = 0;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, &ns[i]);
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += ns[i];
	}
	return sum / n;
}

/* 1 if unhooked entry points are the driver's own: the pointer
 * cuGetProcAddress hands out for cuLaunchKernel is the driver's. */
static int unhooked_is_drivers(void)
{
	void *mine = NULL, *drv = NULL;
	CUdriverProcAddressQueryResult st;
	cuGetProcAddress_v2("cuLaunchKernel", &mine, 12000, 0, &st);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (h)
		drv = dlsym(h, "cuLaunchKernel");
	return mine && mine == drv;
}

/* name=value in the environment, or name unset when value is NULL. */
static void env_set(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

/* The library to preload: argv[1], else $(O)/libvramctl.so beside
 * $(O)/bench/this program. */
static void library_path(int argc, char **argv, char *lib, size_t len)
{
	if (argc > 1) {
		snprintf(lib, len, "%s", argv[1]);
		return;
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(lib, len, "%s/../libvramctl.so", self);
}

#endif /* VRAMCTL_BENCH_ALLOC_COMMON_H */
