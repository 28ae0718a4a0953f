/*
 * test_driver_path - VRAMCTL_DRIVER naming something other than the driver
 * the program loads never lets the program run uncapped. The program reaches
 * the driver as TensorFlow and cudart do: dlopen("libcuda.so.1") + dlsym,
 * and cuGetProcAddress_v2 found that way. With VRAMCTL_DRIVER naming a
 * missing path, or another copy of the driver, each memory entry point is
 * either capped (two 600 MiB allocations under 1 GiB: the second refused) or
 * not handed out at all, and the message says which (fail closed).
 */
#include "hooktest.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

/* Two 600 MiB allocations through alloc: never both granted under 1 GiB. */
static void never_uncapped(alloc_fn alloc)
{
	CUdeviceptr a, b;
	if (!alloc)
		return; /* not handed out: fail closed */
	CUresult r1 = alloc(&a, 600 * MiB), r2 = alloc(&b, 600 * MiB);
	ASSERT(r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS);
}

static int child(void)
{
	/* The program's driver (linked, and the one dlopen finds) sets up the
	 * context; the memory entry points are looked up as TensorFlow does. */
	ht_ctx();
	/* Linked: the wrapper, whose look-up of the current device goes to
	 * vramctl's driver. */
	never_uncapped(cuMemAlloc_v2);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	ASSERT(h);
	never_uncapped((alloc_fn)dlsym(h, "cuMemAlloc_v2"));
	/* The same name in a library that is not a driver (here vramctl's own
	 * wrapper, as another interposer would define it) is left alone. */
	void *self = dlopen(ht_lib(), RTLD_NOW | RTLD_NOLOAD);
	ASSERT(self && dlsym(self, "cuMemAlloc_v2"));
	proc_fn proc = (proc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (proc) {
		void *p = NULL;
		CUdriverProcAddressQueryResult st;
		ASSERT_CU(proc("cuMemAlloc", &p, 12000, 0, &st), CUDA_SUCCESS);
		never_uncapped((alloc_fn)p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "child") == 0 ? child() : 2;
	REQUIRE_SIM();
	if (ht_total() < 2 * GiB)
		SKIP("needs a device of 2 GiB or more");
	/* Another copy of the driver: the same file under another name. */
	Dl_info di;
	ASSERT(dladdr((void *)cuInit, &di) && di.dli_fname);
	char copy[1024], cmd[2200], drv[1100];
	snprintf(copy, sizeof copy, "%s/other-libcuda.so.1", ht_tmp());
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", di.dli_fname, copy);
	ASSERT_EQ(system(cmd), 0);

	snprintf(drv, sizeof drv, "VRAMCTL_DRIVER=%s", copy);
	const char *other[] = {"VRAMCTL_LIMIT=1G", drv, NULL};
	ASSERT_EQ(ht_run("child", other), 0);
	/* The look-ups it hands out find nothing; the linked calls are refused
	 * and said, each (#25: they were silent), naming the copy. */
	ASSERT_EQ(ht_err_count("child", "(fail closed)"), 3);
	ASSERT_EQ(ht_err_count("child", "vramctl: cuCtxGetDevice failed (CUDA_ERROR_NOT_"), 2);
	ASSERT_EQ(ht_err_count("child", "a program that uses another copy of the driver"), 2);
	ASSERT_EQ(ht_err_count("child", "other-libcuda.so.1"), 3);

	snprintf(drv, sizeof drv, "VRAMCTL_DRIVER=%s/missing/libcuda.so.1", ht_tmp());
	const char *missing[] = {"VRAMCTL_LIMIT=1G", drv, NULL};
	ASSERT_EQ(ht_run("child", missing), 0);
	ASSERT_EQ(ht_err_count("child", "cannot load the CUDA driver"), 1);
	ASSERT_EQ(ht_err_count("child", "(fail closed)"), 2);

	/* The same driver by its own path: capped, and nothing to say. */
	snprintf(drv, sizeof drv, "VRAMCTL_DRIVER=%s", di.dli_fname);
	const char *same[] = {"VRAMCTL_LIMIT=1G", drv, NULL};
	ASSERT_EQ(ht_run("child", same), 0);
	ASSERT_EQ(ht_err_count("child", "fail closed"), 0);
	return 0;
}
