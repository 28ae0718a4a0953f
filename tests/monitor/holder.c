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

#include "common/cuda_api.h"

int main(int argc, char **argv)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("error: cannot load libcuda.so.1: %s\n", dlerror());
		return 1;
	}
	vr_pfn_cuInit init;
	vr_pfn_cuDeviceGet dev_get;
	vr_pfn_cuDevicePrimaryCtxRetain retain;
	vr_pfn_cuCtxSetCurrent set;
	vr_pfn_cuMemAlloc_v2 alloc;
	vr_pfn_cuMemFree_v2 mfree;
	vr_pfn_cuMemGetInfo_v2 info;
	vr_pfn_cuCtxSetLimit set_limit;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&dev_get = dlsym(h, "cuDeviceGet");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	*(void **)&alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&mfree = dlsym(h, "cuMemFree_v2");
	*(void **)&info = dlsym(h, "cuMemGetInfo_v2");
	*(void **)&set_limit = dlsym(h, "cuCtxSetLimit");
	if (!init || !dev_get || !retain || !set || !alloc || !mfree || !info) {
		printf("error: driver entry points missing\n");
		return 1;
	}
	CUdevice dev;
	CUcontext ctx;
	if (init(0) != CUDA_SUCCESS || dev_get(&dev, 0) != CUDA_SUCCESS ||
	    retain(&ctx, dev) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS) {
		printf("error: cannot start on GPU 0\n");
		return 1;
	}
	int first = 1;
	if (argc > 1 && !strcmp(argv[1], "-t")) {
		size_t free_b = 0, total_b = 0;
		if (info(&free_b, &total_b) != CUDA_SUCCESS) {
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
			if (!set_limit ||
			    set_limit(CU_LIMIT_STACK_SIZE, (size_t)strtoull(argv[i] + 1, NULL, 10)
			                                       << 10) != CUDA_SUCCESS)
				printf("error: cuCtxSetLimit failed\n");
			continue;
		}
		if (argv[i][0] == 'f') {
			size_t free_b = 0, total_b = 0;
			if (info(&free_b, &total_b) != CUDA_SUCCESS)
				continue;
			bytes = free_b / 100 * (size_t)strtoull(argv[i] + 1, NULL, 10);
		}
		if (alloc(&p[n], bytes) == CUDA_SUCCESS)
			n++;
	}
	printf("ready %d %d\n", n, (int)getpid());
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (int i = 0; i < n; i++)
		mfree(p[i]);
	return 0;
}
