/*
 * alloc_bench_driver.c - a do-nothing libcuda.so.1 for alloc_bench: each
 * call costs a few nanoseconds, so what vramctl adds is not lost in the
 * simulator's own cost (file locks, bookkeeping). One device of 80 GiB;
 * cuMemAlloc_v2 hands out increasing addresses and cuMemFree_v2 forgets;
 * pinned host memory (spill) is malloc'ed, its device pointer the same.
 * Only for measuring; it simulates nothing.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define EXPORT __attribute__((visibility("default")))

static _Atomic unsigned long long next_addr = 1ull << 40;

EXPORT CUresult cuInit(unsigned int f)
{
	(void)f;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int i)
{
	*d = i;
	return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	memset(u->bytes, 0x42 + d, sizeof u->bytes);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d)
{
	(void)d;
	*b = 80ull << 30;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = (CUcontext)0x1000;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	*d = 0;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	*p = atomic_fetch_add_explicit(&next_addr, (n + 511) & ~511ull, memory_order_relaxed);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	(void)p;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	(void)flags;
	*pp = malloc(n);
	return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	(void)flags;
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
	if (a != CU_POINTER_ATTRIBUTE_HOST_POINTER)
		return CUDA_ERROR_INVALID_VALUE;
	*(void **)data = (void *)(uintptr_t)p;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int sm,
                               CUstream s, void **kp, void **ex)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sm, (void)s;
	(void)kp, (void)ex;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int v, cuuint64_t fl,
                                    CUdriverProcAddressQueryResult *st)
{
	(void)v, (void)fl;
	char name[128];
	void *p = NULL;
	Dl_info di;
	/* The versioned name for the two entry points that have one. */
	snprintf(name, sizeof name, "%s%s", sym,
	         (!strcmp(sym, "cuMemAlloc") || !strcmp(sym, "cuMemFree")) ? "_v2" : "");
	if (dladdr((void *)cuInit, &di)) {
		void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
		p = h ? dlsym(h, name) : NULL;
	}
	*pfn = p;
	if (st)
		*st = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_SUCCESS;
}
