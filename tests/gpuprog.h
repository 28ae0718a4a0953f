/*
 * gpuprog.h - the start shared by the test programs that load the driver
 * as frameworks do (dlopen, dlsym) and work on one GPU: the monitor's
 * holder (tests/monitor/holder.c) and memctl (tests/hook/memctl.c).
 */
#ifndef VRAMCTL_TESTS_GPUPROG_H
#define VRAMCTL_TESTS_GPUPROG_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_api.h"

struct gp_driver {
	vr_pfn_cuMemAlloc_v2 alloc;
	vr_pfn_cuMemFree_v2 mfree;
	vr_pfn_cuMemGetInfo_v2 info;
	vr_pfn_cuCtxSetLimit set_limit; /* may be NULL */
	/* Bytes to and from device memory (may be NULL): entry points vramctl
	 * does not wrap, as a framework's kernels and copies are. */
	vr_pfn_cuMemcpyHtoD_v2 htod;
	vr_pfn_cuMemcpyDtoH_v2 dtoh;
	vr_pfn_cuMemAllocManaged managed;
};

/* Loads libcuda.so.1 and makes GPU `ordinal`'s primary context current.
 * 0, or -1 after an "error: ..." line on stdout (what the tests read). */
static inline int gp_start(struct gp_driver *d, int ordinal)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("error: cannot load libcuda.so.1: %s\n", dlerror());
		return -1;
	}
	vr_pfn_cuInit init;
	vr_pfn_cuDeviceGet dev_get;
	vr_pfn_cuDevicePrimaryCtxRetain retain;
	vr_pfn_cuCtxSetCurrent set;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&dev_get = dlsym(h, "cuDeviceGet");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	*(void **)&d->alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&d->mfree = dlsym(h, "cuMemFree_v2");
	*(void **)&d->info = dlsym(h, "cuMemGetInfo_v2");
	*(void **)&d->set_limit = dlsym(h, "cuCtxSetLimit");
	*(void **)&d->htod = dlsym(h, "cuMemcpyHtoD_v2");
	*(void **)&d->dtoh = dlsym(h, "cuMemcpyDtoH_v2");
	*(void **)&d->managed = dlsym(h, "cuMemAllocManaged");
	/* GP_PROCADDR=1: the copies as cudart gets them, through
	 * cuGetProcAddress_v2 (after cuInit, below). */
	vr_pfn_cuGetProcAddress_v2 procaddr;
	*(void **)&procaddr = dlsym(h, "cuGetProcAddress_v2");
	const char *pa = getenv("GP_PROCADDR");
	int by_procaddr = pa && !strcmp(pa, "1") && procaddr;
	if (!init || !dev_get || !retain || !set || !d->alloc || !d->mfree || !d->info) {
		printf("error: driver entry points missing\n");
		return -1;
	}
	CUdevice dev;
	CUcontext ctx;
	if (init(0) != CUDA_SUCCESS || dev_get(&dev, ordinal) != CUDA_SUCCESS ||
	    retain(&ctx, dev) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS) {
		printf("error: cannot start on GPU %d\n", ordinal);
		return -1;
	}
	CUdriverProcAddressQueryResult st;
	if (by_procaddr &&
	    (procaddr("cuMemcpyHtoD", (void **)&d->htod, 12000, 0, &st) != CUDA_SUCCESS ||
	     procaddr("cuMemcpyDtoH", (void **)&d->dtoh, 12000, 0, &st) != CUDA_SUCCESS)) {
		printf("error: cuGetProcAddress_v2 failed\n");
		return -1;
	}
	return 0;
}

#endif /* VRAMCTL_TESTS_GPUPROG_H */
