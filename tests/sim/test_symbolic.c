/*
 * test_symbolic.c - cuGetProcAddress hands out the driver's own entry
 * points even when another object in the process (here this program, as a
 * preloaded interposer would) defines the same names: like the real driver,
 * the simulator binds its own references locally.
 */
#include "simtest.h"

#include <dlfcn.h>

/* An interposer's cuMemAlloc_v2: the dynamic linker sees this one first. */
__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	(void)dptr;
	(void)bytesize;
	return CUDA_ERROR_NOT_PERMITTED;
}

int main(void)
{
	vr_pfn_cuMemAlloc_v2 p = NULL;
	CUdriverProcAddressQueryResult st;
	CUdeviceptr d;

	REQUIRE_SIM();
	sim_setup();
	ASSERT_CU(cuMemAlloc_v2(&d, 1), CUDA_ERROR_NOT_PERMITTED); /* ours */
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", (void **)&p, 12000, 0, &st), CUDA_SUCCESS);
	ASSERT(p != NULL);
	ASSERT(p != cuMemAlloc_v2);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	ASSERT(h != NULL);
	ASSERT(dlsym(h, "cuMemAlloc_v2") == (void *)p);
	dlclose(h);
	ASSERT_CU(p(&d, 4096), CUDA_SUCCESS);       /* the driver's */
	ASSERT_UEQ(sim_used(), 64 * MiB + 2 * MiB); /* a small block's page */
	return 0;
}
