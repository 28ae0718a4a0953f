/*
 * test_lookups - when a look-up the library needs fails, the allocation is
 * refused, never made uncounted. The simulator fails every call of one
 * look-up (VRAMSIM_FAULT=name:1+:CUDA_ERROR_UNKNOWN); the program then asks
 * for three blocks of 600 MiB under a 1 GiB cap. Each is refused with the
 * look-up's own error, and the card (NVML's process list, which vramctl does
 * not touch) holds nothing for the process; a memory query where the device
 * cannot be identified fails the same way instead of showing the device
 * uncapped. Each refusal is said (#25: they were silent), one line each,
 * naming the look-up and its error, rate limited with the denials.
 */
#include "hooktest.h"

static int child(const char *how)
{
	CUdevice dev = ht_ctx();
	nvmlDevice_t nvdev = ht_nvml_dev(dev);
	uint64_t base = ht_phys_used(nvdev);
	CUstream s;
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++) {
		CUdeviceptr p;
		CUresult rc = !strcmp(how, "async") ? cuMemAllocAsync(&p, 600 * MiB, s)
		                                    : cuMemAlloc_v2(&p, 600 * MiB);
		ASSERT_CU(rc, CUDA_ERROR_UNKNOWN);
	}
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_UEQ(ht_phys_used(nvdev) - base, 0);
	/* Nor does a memory query show the whole device: where the device
	 * cannot be identified, it fails with the look-up's error. */
	if (!strcmp(how, "linear")) {
		size_t f, t;
		ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_ERROR_UNKNOWN);
	}
	if (getenv("T_NVML")) { /* the device list cannot be read: nor by NVML */
		nvmlMemory_t m;
		ASSERT_CU(nvmlDeviceGetMemoryInfo(nvdev, &m), NVML_ERROR_UNKNOWN);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(argv[1]);
	REQUIRE_SIM();
	if (ht_total() < 2 * GiB)
		SKIP("needs a device of 2 GiB or more");
	/* fault, child, extra env, the look-up, lines said (three allocations,
	 * then the queries that cannot identify the device either) */
	static const char *const cases[][5] = {
	    {"VRAMSIM_FAULT=cuCtxGetDevice:1+:CUDA_ERROR_UNKNOWN", "linear", NULL, "cuCtxGetDevice",
	     "4"},
	    {"VRAMSIM_FAULT=cuDeviceGetCount:1+:CUDA_ERROR_UNKNOWN", "linear", "T_NVML=1",
	     "cuDeviceGetCount", "5"},
	    {"VRAMSIM_FAULT=cuMemPoolGetAttribute:1+:CUDA_ERROR_UNKNOWN", "async", NULL,
	     "cuMemPoolGetAttribute", "3"},
	    {"VRAMSIM_FAULT=cuDeviceGetMemPool:1+:CUDA_ERROR_UNKNOWN", "async", NULL,
	     "cuDeviceGetMemPool", "3"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *env[] = {"VRAMCTL_LIMIT=1G", cases[i][0], cases[i][2], NULL};
		char said[160];
		fprintf(stderr, "case %s\n", cases[i][0]);
		ASSERT_EQ(ht_run(cases[i][1], env), 0);
		snprintf(said, sizeof said,
		         "vramctl: %s failed (CUDA_ERROR_UNKNOWN, 999): vramctl cannot tell which "
		         "GPU's cap applies",
		         cases[i][3]);
		ASSERT_EQ(ht_err_count(cases[i][1], said), atoi(cases[i][4]));
		ASSERT_EQ(ht_err_count(cases[i][1], "(fail closed)"), atoi(cases[i][4]));
	}
	return 0;
}
