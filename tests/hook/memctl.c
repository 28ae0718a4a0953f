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

#include "common/cuda_api.h"

#define MAX_BLOCKS 4096

int main(void)
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
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&dev_get = dlsym(h, "cuDeviceGet");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	*(void **)&alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&mfree = dlsym(h, "cuMemFree_v2");
	*(void **)&info = dlsym(h, "cuMemGetInfo_v2");
	if (!init || !dev_get || !retain || !set || !alloc || !mfree || !info) {
		printf("error: driver entry points missing\n");
		return 1;
	}
	const char *g = getenv("MEMCTL_GPU");
	CUdevice dev;
	CUcontext ctx;
	if (init(0) != CUDA_SUCCESS || dev_get(&dev, g ? atoi(g) : 0) != CUDA_SUCCESS ||
	    retain(&ctx, dev) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS) {
		printf("error: cannot start on GPU %s\n", g ? g : "0");
		return 1;
	}
	static CUdeviceptr p[MAX_BLOCKS];
	int n = 0;
	char line[128];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (line[0] == 'a') {
			size_t bytes = (size_t)strtoull(line + 1, NULL, 10) << 20;
			CUresult rc =
			    n < MAX_BLOCKS ? alloc(&p[n], bytes) : CUDA_ERROR_INVALID_VALUE;
			if (rc == CUDA_SUCCESS) {
				n++;
				printf("ok\n");
			} else if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
				printf("oom\n");
			} else {
				printf("err %d\n", (int)rc);
			}
		} else if (line[0] == 'f') {
			printf(n && mfree(p[--n]) == CUDA_SUCCESS ? "ok\n" : "none\n");
		} else if (line[0] == 'F') {
			while (n)
				mfree(p[--n]);
			printf("ok\n");
		} else if (line[0] == 'i') {
			size_t free_b = 0, total_b = 0;
			if (info(&free_b, &total_b) == CUDA_SUCCESS)
				printf("info %zu %zu\n", free_b, total_b);
			else
				printf("err info\n");
		} else {
			printf("err what\n");
		}
	}
	while (n)
		mfree(p[--n]);
	return 0;
}
