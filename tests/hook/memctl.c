/*
 * memctl - a GPU program driven line by line on stdin, for the tests of
 * caps that change while it runs (limit.sh) and of guarantees: it loads
 * the driver as frameworks do (dlopen), starts on GPU 0 (or $MEMCTL_GPU),
 * prints "ready PID", then answers each line with one line:
 *
 *   a MIB   allocate: "ok", "oom" (CUDA_ERROR_OUT_OF_MEMORY) or "err N"
 *   f       free the newest block: "ok" (or "none")
 *   F       free every block: "ok"
 *   i       "info FREE TOTAL" (cuMemGetInfo_v2, in bytes)
 *
 * and exits at end of input, freeing what it holds.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/gpuprog.h"

#define MAX_BLOCKS 4096

int main(void)
{
	const char *g = getenv("MEMCTL_GPU");
	struct gp_driver d;
	if (gp_start(&d, g ? atoi(g) : 0) != 0)
		return 1;
	static CUdeviceptr p[MAX_BLOCKS];
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
				n++;
				printf("ok\n");
			} else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
				printf("oom\n");
			} else {
				printf("err %d\n", (int)rc);
			}
		} else if (line[0] == 'f') {
			printf(n && d.mfree(p[--n]) == CUDA_SUCCESS ? "ok\n" : "none\n");
		} else if (line[0] == 'F') {
			while (n)
				d.mfree(p[--n]);
			printf("ok\n");
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
