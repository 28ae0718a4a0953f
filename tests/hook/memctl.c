/*
 * memctl - a GPU program driven line by line on stdin, for the tests of
 * caps that change while it runs (limit.sh) and of guarantees: it loads
 * the driver as frameworks do (dlopen), starts on GPU 0 (or $MEMCTL_GPU),
 * prints "ready PID", then answers each line with one line:
 *
 *   a MIB   allocate: "ok", "oom" (CUDA_ERROR_OUT_OF_MEMORY) or "err N"
 *   m MIB   allocate managed memory (cuMemAllocManaged): "ok" or "err N"
 *   f       free the newest block: "ok" (or "none")
 *   F       free every block: "ok"
 *   i       "info FREE TOTAL" (cuMemGetInfo_v2, in bytes)
 *   p       writes a pattern into the newest block's first and last MiB
 *           (cuMemcpyHtoD, an entry point vramctl does not wrap): "ok"
 *   c       reads it back (cuMemcpyDtoH): "ok" intact, "bad", "err N"
 *   t       "t NS": CLOCK_MONOTONIC, to order events across processes
 *
 * and exits at end of input, freeing what it holds.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/gpuprog.h"

#define MAX_BLOCKS 4096

#define MIB (1u << 20)

static unsigned char pattern_of(size_t i)
{
	return (unsigned char)(i * 131 + 7);
}

/* The pattern at both ends of block p of size bytes: write (w 1) or check
 * (w 0). A CUresult, or -1 for a check that found other bytes. */
static int pattern(const struct gp_driver *d, CUdeviceptr p, size_t bytes, int w)
{
	static unsigned char buf[MIB], back[MIB];
	size_t n = bytes < MIB ? bytes : MIB;
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern_of(i);
	CUdeviceptr at[2] = {p, p + bytes - n};
	for (int k = 0; k < 2; k++) {
		CUresult rc = w ? d->htod(at[k], buf, n) : d->dtoh(back, at[k], n);
		if (rc != CUDA_SUCCESS)
			return (int)rc;
		if (!w && memcmp(buf, back, n) != 0)
			return -1;
	}
	return 0;
}

int main(void)
{
	const char *g = getenv("MEMCTL_GPU");
	struct gp_driver d;
	if (gp_start(&d, g ? atoi(g) : 0) != 0)
		return 1;
	static CUdeviceptr p[MAX_BLOCKS];
	static size_t sizes[MAX_BLOCKS];
	int n = 0;
	char line[128];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (line[0] == 'a') {
			size_t bytes = (size_t)strtoull(line + 1, NULL, 10) << 20;
			CUresult rc =
			    n < MAX_BLOCKS ? d.alloc(&p[n], bytes) : CUDA_ERROR_INVALID_VALUE;
			if (rc == CUDA_SUCCESS) {
				sizes[n] = bytes;
				n++;
				printf("ok\n");
			} else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
				printf("oom\n");
			} else {
				printf("err %d\n", (int)rc);
			}
		} else if (line[0] == 'm' && d.managed) {
			/* N MiB of managed memory, freed as the others. */
			size_t bytes = (size_t)strtoull(line + 1, NULL, 10) << 20;
			CUresult rc = n < MAX_BLOCKS ? d.managed(&p[n], bytes, CU_MEM_ATTACH_GLOBAL)
			                             : CUDA_ERROR_INVALID_VALUE;
			if (rc == CUDA_SUCCESS) {
				sizes[n++] = bytes;
				printf("ok\n");
			} else {
				printf("err %d\n", (int)rc);
			}
		} else if (line[0] == 'f') {
			printf(n && d.mfree(p[--n]) == CUDA_SUCCESS ? "ok\n" : "none\n");
		} else if (line[0] == 'F') {
			while (n)
				d.mfree(p[--n]);
			printf("ok\n");
		} else if ((line[0] == 'p' || line[0] == 'c') && n && d.htod && d.dtoh) {
			int rc = pattern(&d, p[n - 1], sizes[n - 1], line[0] == 'p');
			if (rc == 0)
				printf("ok\n");
			else if (rc < 0)
				printf("bad\n");
			else
				printf("err %d\n", rc);
		} else if (line[0] == 't') {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			printf("t %lld\n", (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
		} else if (line[0] == 'i') {
			size_t free_b = 0, total_b = 0;
			if (d.info(&free_b, &total_b) == CUDA_SUCCESS)
				printf("info %zu %zu\n", free_b, total_b);
			else
				printf("err info\n");
		} else {
			printf("err what\n");
		}
	}
	while (n)
		d.mfree(p[--n]);
	return 0;
}
