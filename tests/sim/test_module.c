/*
 * test_module.c - code on the card: modules (cuModuleLoad*, cuModuleUnload)
 * and libraries (cuLibraryLoad*, cuLibraryUnload) take VRAMSIM_MODULE_BYTES
 * on their context's card, when CUDA_MODULE_LOADING says: EAGER at load
 * (a library in every context, and in contexts created later), LAZY at the
 * first cuModuleGetFunction (modules) or the first launch in a context
 * (libraries); unloading and destroying the context give it back. And
 * cuGetProcAddress knows the new names.
 */
#include "simtest.h"

#include "sim/cuda_extra.h"

#include <string.h>

static const char image[] = "a module image";

static CUresult launch(CUfunction f)
{
	return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

static CUresult lib_load(CUlibrary *lib)
{
	return cuLibraryLoadData(lib, image, NULL, NULL, 0, NULL, NULL, 0);
}

/* The default (driver 13.0): lazy. */
static void check_lazy_modules(CUcontext primary)
{
	CUmoduleLoadingMode mode = 0;
	CUmodule m, m2;
	CUfunction f, f2;
	unsigned long long used0 = sim_used();

	ASSERT_CU(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
	ASSERT_EQ(mode, VRAMSIM_CU_MODULE_LAZY_LOADING);
	ASSERT_CU(cuModuleGetLoadingMode(NULL), CUDA_ERROR_INVALID_VALUE);

	/* Loaded: nothing on the card until a function is taken. */
	ASSERT_CU(cuModuleLoadData(&m, image), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuModuleGetFunction(&f, m, "kernel"), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);
	ASSERT_CU(cuModuleGetFunction(&f2, m, "other"), CUDA_SUCCESS);
	ASSERT_CU(launch(f), CUDA_SUCCESS);
	ASSERT_CU(launch(f2), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);

	/* Every loading call; each module its own image. */
	ASSERT_CU(cuModuleLoad(&m2, "kernels.cubin"), CUDA_SUCCESS);
	ASSERT_CU(cuModuleGetFunction(&f2, m2, "kernel"), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB);
	ASSERT_CU(cuModuleUnload(m2), CUDA_SUCCESS);
	ASSERT_CU(cuModuleLoadFatBinary(&m2, image), CUDA_SUCCESS);
	ASSERT_CU(cuModuleUnload(m2), CUDA_SUCCESS);
	ASSERT_CU(cuModuleLoadDataEx(&m2, image, 0, NULL, NULL), CUDA_SUCCESS);
	ASSERT_CU(cuModuleUnload(m2), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);

	/* Bad arguments. */
	ASSERT_CU(cuModuleLoadData(NULL, image), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleLoadData(&m2, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleLoad(&m2, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleLoadDataEx(&m2, image, 1, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleGetFunction(NULL, m, "kernel"), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleGetFunction(&f2, m, NULL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuModuleGetFunction(&f2, (CUmodule)0x1, "kernel"), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuModuleUnload((CUmodule)0x1), CUDA_ERROR_INVALID_HANDLE);
	/* A module is loaded into the current context. */
	ASSERT_CU(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
	ASSERT_CU(cuModuleLoadData(&m2, image), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);

	/* Unloaded: the memory goes back, the handles go stale. */
	ASSERT_CU(cuModuleUnload(m), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuModuleGetFunction(&f2, m, "kernel"), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(launch(f), CUDA_ERROR_INVALID_HANDLE);
	/* A handle the driver never gave is left to the launch's own checks. */
	ASSERT_CU(launch((CUfunction)0x1), CUDA_SUCCESS);

	/* A module goes with its context. */
	CUcontext c;
	ASSERT_CU(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
	ASSERT_CU(cuModuleLoadData(&m, image), CUDA_SUCCESS);
	ASSERT_CU(cuModuleGetFunction(&f, m, "kernel"), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 64 * MiB + 2 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
}

/* A library is loaded into a context at the first launch of one of its
 * kernels there (or cuKernelGetFunction), below every allocation call. */
static void check_lazy_library(CUcontext primary)
{
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	CUcontext c;
	unsigned long long used0 = sim_used();

	ASSERT_CU(lib_load(&lib), CUDA_SUCCESS);
	ASSERT_CU(cuLibraryGetKernel(&k, lib, "kernel"), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(launch((CUfunction)(void *)k), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);
	ASSERT_CU(launch((CUfunction)(void *)k), CUDA_SUCCESS);
	ASSERT_CU(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
	ASSERT_CU(launch(f), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);

	/* Another context: loaded there too, when needed there. */
	ASSERT_CU(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB + 64 * MiB);
	ASSERT_CU(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB + 64 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);

	/* Bad arguments. */
	ASSERT_CU(cuLibraryLoadData(NULL, image, NULL, NULL, 0, NULL, NULL, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuLibraryLoadData(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuLibraryLoadFromFile(&lib, "k.fatbin", NULL, NULL, 1, NULL, NULL, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuLibraryGetKernel(&k, (CUlibrary)0x1, "kernel"), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuLibraryGetKernel(NULL, lib, "kernel"), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuKernelGetFunction(NULL, k), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuKernelGetFunction(&f, (CUkernel)0x1), CUDA_ERROR_INVALID_HANDLE);

	/* Unloaded from every context. */
	ASSERT_CU(cuLibraryUnload(lib), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(launch((CUfunction)(void *)k), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);

	ASSERT_CU(cuLibraryLoadFromFile(&lib, "k.fatbin", NULL, NULL, 0, NULL, NULL, 0),
	          CUDA_SUCCESS);
	ASSERT_CU(cuLibraryGetKernel(&k, lib, "kernel"), CUDA_SUCCESS);
	ASSERT_CU(launch((CUfunction)(void *)k), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 2 * MiB);
	ASSERT_CU(cuLibraryUnload(lib), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
}

/* CUDA_MODULE_LOADING=EAGER, VRAMSIM_MODULE_BYTES=3M (4 MiB: whole pages). */
static int child_eager(void)
{
	CUmoduleLoadingMode mode = 0;
	CUmodule m;
	CUfunction f;
	CUlibrary lib;
	CUcontext c, primary = sim_setup();
	unsigned long long used0 = sim_used();

	ASSERT_CU(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
	ASSERT_EQ(mode, VRAMSIM_CU_MODULE_EAGER_LOADING);
	ASSERT_CU(cuModuleLoadData(&m, image), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB);
	ASSERT_CU(cuModuleGetFunction(&f, m, "kernel"), CUDA_SUCCESS);
	ASSERT_CU(launch(f), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB);
	ASSERT_CU(cuModuleUnload(m), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);

	/* A library: into every live context now, into new ones as made. */
	ASSERT_CU(lib_load(&lib), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB);
	ASSERT_CU(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 8 * MiB + 64 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 4 * MiB);
	ASSERT_CU(cuLibraryUnload(lib), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), used0 + 64 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	return 0;
}

/* VRAMSIM_MODULE_BYTES=20G on a 16 GiB card: the image does not fit. */
static int child_big(void)
{
	CUmodule m;
	CUfunction f;
	CUlibrary lib;
	CUkernel k;
	sim_setup();
	unsigned long long used0 = sim_used();
	ASSERT_CU(cuModuleLoadData(&m, image), CUDA_SUCCESS); /* lazy */
	ASSERT_CU(cuModuleGetFunction(&f, m, "kernel"), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(lib_load(&lib), CUDA_SUCCESS);
	ASSERT_CU(cuLibraryGetKernel(&k, lib, "kernel"), CUDA_SUCCESS);
	ASSERT_CU(launch((CUfunction)(void *)k), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(sim_used(), used0);
	ASSERT_CU(cuModuleUnload(m), CUDA_SUCCESS);
	ASSERT_CU(cuLibraryUnload(lib), CUDA_SUCCESS);
	return 0;
}

/* EAGER with an image too big: the load fails, nothing stays. */
static int child_big_eager(void)
{
	CUmodule m;
	CUlibrary lib;
	sim_setup();
	unsigned long long used0 = sim_used();
	ASSERT_CU(cuModuleLoadData(&m, image), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(lib_load(&lib), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(sim_used(), used0);
	return 0;
}

/* Which mode: lazy by default only from CUDA 12.2; 11.7 can be told to. */
static int child_mode(void)
{
	CUmoduleLoadingMode mode = 0;
	const char *want = getenv("WANT_MODE");
	sim_setup();
	ASSERT_CU(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS);
	ASSERT_EQ(mode, atoi(want));
	return 0;
}

static void check_procaddr(void)
{
	CUdriverProcAddressQueryResult st;
	void *p;
	ASSERT_CU(cuGetProcAddress_v2("cuLibraryLoadData", &p, 12000, 0, &st), CUDA_SUCCESS);
	ASSERT(p == (void *)cuLibraryLoadData);
	ASSERT_CU(cuGetProcAddress_v2("cuLibraryLoadData", &p, 11080, 0, &st), CUDA_SUCCESS);
	ASSERT(p == NULL);
	ASSERT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	ASSERT_CU(cuGetProcAddress_v2("cuModuleLoadData", &p, 2000, 0, &st), CUDA_SUCCESS);
	ASSERT(p == (void *)cuModuleLoadData);
	ASSERT_CU(cuGetProcAddress_v2("cuModuleGetLoadingMode", &p, 11070, 0, &st), CUDA_SUCCESS);
	ASSERT(p == (void *)cuModuleGetLoadingMode);
	ASSERT_CU(cuGetProcAddress_v2("cuKernelGetFunction", &p, 13000, 0, &st), CUDA_SUCCESS);
	ASSERT(p == (void *)cuKernelGetFunction);
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2 && strcmp(argv[1], "eager") == 0)
		return child_eager();
	if (argc == 2 && strcmp(argv[1], "big") == 0)
		return child_big();
	if (argc == 2 && strcmp(argv[1], "big-eager") == 0)
		return child_big_eager();
	if (argc == 2 && strcmp(argv[1], "mode") == 0)
		return child_mode();

	CUcontext primary = sim_setup();
	check_lazy_modules(primary);
	check_lazy_library(primary);
	check_procaddr();

	const char *eager[] = {"CUDA_MODULE_LOADING=EAGER", "VRAMSIM_MODULE_BYTES=3M", NULL};
	ASSERT_EQ(sim_run_self("eager", eager), 0);
	const char *big[] = {"VRAMSIM_MODULE_BYTES=20G", NULL};
	ASSERT_EQ(sim_run_self("big", big), 0);
	const char *big_eager[] = {"VRAMSIM_MODULE_BYTES=20G", "CUDA_MODULE_LOADING=EAGER", NULL};
	ASSERT_EQ(sim_run_self("big-eager", big_eager), 0);
	const char *old[] = {"VRAMSIM_DRIVER_VERSION=12010", "WANT_MODE=1", NULL};
	ASSERT_EQ(sim_run_self("mode", old), 0);
	const char *old_lazy[] = {"VRAMSIM_DRIVER_VERSION=11070", "CUDA_MODULE_LOADING=LAZY",
	                          "WANT_MODE=2", NULL};
	ASSERT_EQ(sim_run_self("mode", old_lazy), 0);
	const char *older[] = {"VRAMSIM_DRIVER_VERSION=11060", "CUDA_MODULE_LOADING=LAZY",
	                       "WANT_MODE=1", NULL};
	ASSERT_EQ(sim_run_self("mode", older), 0);
	const char *bad[] = {"CUDA_MODULE_LOADING=lazy-ish", "WANT_MODE=2", NULL};
	ASSERT_EQ(sim_run_self("mode", bad), 0);
	return 0;
}
