/*
 * interposer.c - another LD_PRELOAD library, as a user might load beside
 * vramctl (a profiler, libfaketime...), built at -O0. It interposes puts and
 * finds libc's with dlsym(RTLD_NEXT, "puts"): if vramctl's dlsym broke
 * RTLD_NEXT, it would get its own puts back and recurse forever. Its
 * constructor also calls the driver before anyone called cuInit, as
 * libraries do from their constructors.
 */
#include <dlfcn.h>
#include <stdio.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int interposer_ctor_rc = -1;
EXPORT int interposer_ctor_info_rc = -1;
EXPORT int interposer_puts_calls;

static int (*next_puts)(const char *);

EXPORT void *interposer_next_puts(void);
EXPORT void *interposer_default(const char *name);

EXPORT void *interposer_next_puts(void)
{
	return dlsym(RTLD_NEXT, "puts");
}

EXPORT void *interposer_default(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

EXPORT int puts(const char *s)
{
	if (!next_puts)
		next_puts = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
	interposer_puts_calls++;
	return next_puts ? next_puts(s) : EOF;
}

__attribute__((constructor)) static void interposer_init(void)
{
	/* Before cuInit, from a constructor: an error code, never a crash. */
	vr_pfn_cuMemAlloc_v2 alloc = (vr_pfn_cuMemAlloc_v2)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
	CUdeviceptr p;
	if (alloc)
		interposer_ctor_rc = alloc(&p, 1 << 20);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		vr_pfn_cuMemGetInfo_v2 info = (vr_pfn_cuMemGetInfo_v2)dlsym(h, "cuMemGetInfo_v2");
		size_t f, t;
		if (info)
			interposer_ctor_info_rc = info(&f, &t);
	}
}
