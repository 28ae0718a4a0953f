/*
 * card_bench - what the cap on the card costs where it asks NVML (#37,
 * docs/figures.md rows 1d-1f). One program, run directly and under the
 * library by `make bench-card` (the figures are ratios of the two, in one
 * run, on the simulator):
 *
 *   card_bench refusals N   the group at its cap, one request refused N
 *                           times (a framework retrying): ns per refusal
 *                           (directly: the driver's own refusal of more
 *                           than the card has)
 *   card_bench contexts N   N cuCtxCreate_v2 + cuCtxDestroy_v2 pairs:
 *                           microseconds per pair
 *   card_bench pss          the process's proportional set size (kB,
 *                           /proc/self/smaps_rollup) once it holds a block
 *
 * Each prints one line "<what> <figure>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define MiB (1024ull * 1024)

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static CUdevice start(void)
{
	CUdevice dev;
	CUcontext ctx;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "card_bench: no device\n");
		exit(1);
	}
	return dev;
}

static int refusals(long n)
{
	size_t f = 0, t = 0;
	CUdeviceptr p, held[4096];
	int k = 0;
	start();
	cuMemGetInfo_v2(&f, &t);
	/* Under a cap: fill it; directly: ask for more than the card. */
	while (k < 4096 && cuMemAlloc_v2(&held[k], 2 * MiB) == CUDA_SUCCESS &&
	       getenv("VRAMCTL_LIMIT"))
		k++;
	size_t ask = getenv("VRAMCTL_LIMIT") ? 2 * MiB : t + 2 * MiB;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (cuMemAlloc_v2(&p, ask) == CUDA_SUCCESS) {
			fprintf(stderr, "card_bench: a request was granted\n");
			return 1;
		}
	printf("refusal_ns %.0f\n", (now_ns() - t0) / n);
	return 0;
}

static int contexts(long n)
{
	CUdevice dev = start();
	CUcontext c;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (cuCtxCreate_v2(&c, 0, dev) != CUDA_SUCCESS) {
			fprintf(stderr, "card_bench: cuCtxCreate_v2 failed\n");
			return 1;
		}
		cuCtxDestroy_v2(c);
	}
	printf("context_us %.1f\n", (now_ns() - t0) / n / 1e3);
	return 0;
}

static int pss(void)
{
	CUdeviceptr p;
	char line[256];
	start();
	if (cuMemAlloc_v2(&p, 64 * MiB) != CUDA_SUCCESS)
		return 1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Pss:", 4))
			printf("pss_kb %ld\n", strtol(line + 4, NULL, 10));
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	if (argc > 2 && !strcmp(argv[1], "refusals"))
		return refusals(n);
	if (argc > 2 && !strcmp(argv[1], "contexts"))
		return contexts(n);
	if (argc > 1 && !strcmp(argv[1], "pss"))
		return pss();
	fprintf(stderr, "usage: card_bench refusals N | contexts N | pss\n");
	return 2;
}
