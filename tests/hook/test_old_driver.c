/*
 * test_old_driver - arrays on a driver that cannot say what they take
 * (before CUDA 11.6 there is no cuArrayGetMemoryRequirements): the library
 * charges what the driver can really take, so 2,000 tiny arrays under a
 * 1 MiB cap never hold more than 1 MiB of the card (NVML's process list,
 * which vramctl does not touch). The same holds on a current driver, where
 * the charge settles to the driver's own figure. The old driver is the
 * simulator built without those entry points (sim/module.mk).
 */
#include "hooktest.h"

static int child(const char *mode)
{
	int old = !strcmp(mode, "old");
	ASSERT_EQ(dlsym(RTLD_DEFAULT, "cuArrayGetMemoryRequirements") == NULL, old);
	CUdevice dev = ht_ctx();
	nvmlDevice_t nvdev = ht_nvml_dev(dev);
	uint64_t base = ht_phys_used(nvdev);
	int granted = 0;
	for (int i = 0; i < 2000; i++) {
		CUarray a;
		CUmipmappedArray m;
		CUDA_ARRAY_DESCRIPTOR d2 = {
		    .Width = 1, .Height = 1, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
		CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 2,
		                              .Height = 2,
		                              .Depth = 2,
		                              .Format = CU_AD_FORMAT_UNSIGNED_INT8,
		                              .NumChannels = 1};
		CUresult rc = i % 3 == 0   ? cuArrayCreate_v2(&a, &d2)
		              : i % 3 == 1 ? cuArray3DCreate_v2(&a, &d3)
		                           : cuMipmappedArrayCreate(&m, &d3, 2);
		if (rc == CUDA_SUCCESS)
			granted++;
		else
			ASSERT_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);
	}
	fprintf(stderr, "%s driver: %d of 2000 arrays granted, card holds %llu bytes\n", mode,
	        granted, (unsigned long long)(ht_phys_used(nvdev) - base));
	ASSERT_ULE(ht_phys_used(nvdev) - base, MiB);
	ASSERT_UGE(granted, 1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(argv[1]);
	REQUIRE_SIM();
	char path[2048];
	const char *lp = getenv("LD_LIBRARY_PATH");
	snprintf(path, sizeof path, "LD_LIBRARY_PATH=%s/sim/cuda-11.5:%s", ht_build(),
	         lp ? lp : "");
	const char *old[] = {"VRAMCTL_LIMIT=1M", "VRAMSIM_DRIVER_VERSION=11050", path,
	                     "VRAMCTL_LOG=error", NULL};
	ASSERT_EQ(ht_run("old", old), 0);
	const char *cur[] = {"VRAMCTL_LIMIT=1M", "VRAMCTL_LOG=error", NULL};
	ASSERT_EQ(ht_run("current", cur), 0);
	return 0;
}
