/*
 * holder - a GPU program for the monitor's tests: allocates the sizes given
 * (MiB) on GPU 0 through the driver, prints "ready N PID" (N = how many
 * allocations succeeded) and then holds the memory until its stdin closes.
 * Tests synchronise on that line and on closing the pipe, never on time.
 * With -t first, it prints "total BYTES" (cuMemGetInfo_v2) before
 * allocating: what the program is told its device holds. An argument fPCT
 * allocates PCT% of what cuMemGetInfo_v2 says is free at that moment (a
 * framework sizing itself); sKIB sets the context's stack size per thread
 * (cuCtxSetLimit: the card takes it for every resident thread), counted
 * neither way in N.
 *
 *   holder [-t] MIB|fPCT|sKIB...
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/gpuprog.h"
#include "tests/hold.h"

int main(int argc, char **argv)
{
	struct gp_driver d;
	if (gp_start(&d, 0) != 0)
		return 1;
	int first = 1;
	if (argc > 1 && !strcmp(argv[1], "-t")) {
		size_t free_b = 0, total_b = 0;
		if (d.info(&free_b, &total_b) != CUDA_SUCCESS) {
			printf("error: cuMemGetInfo_v2 failed\n");
			return 1;
		}
		printf("total %zu\n", total_b);
		first = 2;
	}
	CUdeviceptr p[64];
	int n = 0;
	for (int i = first; i < argc && n < 64; i++) {
		size_t bytes = (size_t)strtoull(argv[i], NULL, 10) << 20;
		if (argv[i][0] == 's') {
			if (!d.set_limit ||
			    d.set_limit(CU_LIMIT_STACK_SIZE, (size_t)strtoull(argv[i] + 1, NULL, 10)
			                                         << 10) != CUDA_SUCCESS)
				printf("error: cuCtxSetLimit failed\n");
			continue;
		}
		if (argv[i][0] == 'f') {
			size_t free_b = 0, total_b = 0;
			if (d.info(&free_b, &total_b) != CUDA_SUCCESS)
				continue;
			bytes = free_b / 100 * (size_t)strtoull(argv[i] + 1, NULL, 10);
		}
		if (d.alloc(&p[n], bytes) == CUDA_SUCCESS)
			n++;
	}
	hold_ready(n);
	for (int i = 0; i < n; i++)
		d.mfree(p[i]);
	return 0;
}
