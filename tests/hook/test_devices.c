/*
 * test_devices - caps follow the program's own numbering: with
 * CUDA_VISIBLE_DEVICES=1 the program's device 0 is the card NVML calls 1,
 * and "0=1G" caps that card, in CUDA and in NVML alike, while the card the
 * program cannot see stays uncapped. A cap given by UUID lands on the same
 * card; devices without a cap are counted but never refused. Needs the
 * simulator's two-device configuration.
 *
 * A cap that names a device the program does not have (an index past its
 * last device, a UUID of no GPU on this machine) is never dropped in
 * silence: one message, and every device allocation is refused (fail
 * closed). A UUID of a GPU that CUDA_VISIBLE_DEVICES hides is not an error:
 * a launcher may give each rank one GPU of a cap written for all.
 */
#include "hooktest.h"

static void use(CUdevice dev)
{
	CUcontext c;
	ASSERT_CU(cuDevicePrimaryCtxRetain(&c, dev), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(c), CUDA_SUCCESS);
}

static uint64_t nvml_total(unsigned idx)
{
	nvmlDevice_t n;
	nvmlMemory_t m;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(idx, &n), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(n, &m), NVML_SUCCESS);
	return m.total;
}

/* CUDA_VISIBLE_DEVICES=1, VRAMCTL_LIMIT=0=1G. */
static int child_visible(void)
{
	int n;
	CUdevice d;
	size_t t;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetCount(&n), CUDA_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_CU(cuDeviceGet(&d, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceTotalMem_v2(&t, d), CUDA_SUCCESS);
	ASSERT_UEQ(t, GiB); /* the 4 GiB card, capped */
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_UEQ(nvml_total(1), GiB); /* the same card in NVML's numbering */
	/* A card the program cannot see: NVML's own total, which holds what
	 * the driver reserves (a 256th on the simulator). */
	ASSERT_UEQ(nvml_total(0), 8 * GiB + 32 * MiB);
	use(d);
	CUdeviceptr p;
	ASSERT_CU(cuMemAlloc_v2(&p, GiB + GiB / 2), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAlloc_v2(&p, GiB / 2), CUDA_SUCCESS);
	return 0;
}

/* Both cards visible; the cap is on card 1 only (by index or by UUID). */
static int child_second(void)
{
	CUdevice d0, d1;
	size_t t;
	CUdeviceptr p;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&d0, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&d1, 1), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceTotalMem_v2(&t, d0), CUDA_SUCCESS);
	ASSERT_UEQ(t, 8 * GiB);
	ASSERT_CU(cuDeviceTotalMem_v2(&t, d1), CUDA_SUCCESS);
	ASSERT_UEQ(t, GiB);
	use(d0);
	ASSERT_CU(cuMemAlloc_v2(&p, 2 * GiB), CUDA_SUCCESS); /* uncapped: never refused */
	use(d1);
	ASSERT_CU(cuMemAlloc_v2(&p, GiB + GiB / 2), CUDA_ERROR_OUT_OF_MEMORY);
	return 0;
}

/* The cap names a device this process does not have: every device is
 * capped at 0, and the memory queries say so. */
static int child_unknown(void)
{
	CUdevice d0, d1;
	CUdeviceptr p;
	size_t f, t;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&d0, 0), CUDA_SUCCESS);
	use(d0);
	ASSERT_CU(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	ASSERT_UEQ(t, 0);
	int n;
	ASSERT_CU(cuDeviceGetCount(&n), CUDA_SUCCESS);
	if (n > 1) {
		ASSERT_CU(cuDeviceGet(&d1, 1), CUDA_SUCCESS);
		use(d1);
		ASSERT_CU(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	}
	return 0;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	setenv("VRAMSIM_DEVICES", "8G,4G", 1);
	if (argc > 1) {
		if (!strcmp(argv[1], "visible"))
			return child_visible();
		if (!strcmp(argv[1], "second"))
			return child_second();
		if (!strcmp(argv[1], "unknown"))
			return child_unknown();
		return 2;
	}
	CUdevice d1;
	char uuid[64], byuuid[128];
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&d1, 1), CUDA_SUCCESS);
	ht_uuid_text(d1, uuid, sizeof uuid);
	snprintf(byuuid, sizeof byuuid, "VRAMCTL_LIMIT=%s=1G", uuid);

	const char *vis[] = {"CUDA_VISIBLE_DEVICES=1", "VRAMCTL_LIMIT=0=1G", NULL};
	ASSERT_EQ(ht_run("visible", vis), 0);
	ASSERT_EQ(ht_err_count("visible", "on GPU 0: cap 1 GiB"), 1);
	const char *vis_uuid[] = {"CUDA_VISIBLE_DEVICES=1", byuuid, NULL};
	ASSERT_EQ(ht_run("visible", vis_uuid), 0);

	const char *second[] = {"VRAMCTL_LIMIT=1=1G", NULL};
	ASSERT_EQ(ht_run("second", second), 0);
	ASSERT_EQ(ht_err_count("second", "on GPU 1: cap 1 GiB"), 1);
	const char *second_uuid[] = {byuuid, NULL};
	ASSERT_EQ(ht_run("second", second_uuid), 0);
	/* The same card named as a MIG-... UUID text is matched by its bytes. */
	char bymig[128];
	snprintf(bymig, sizeof bymig, "VRAMCTL_LIMIT=MIG-%s=1G", uuid + 4);
	const char *second_mig[] = {bymig, NULL};
	ASSERT_EQ(ht_run("second", second_mig), 0);

	/* Devices the program does not have: fail closed, said once. */
	static const char *const unknown[][3] = {
	    {"VRAMCTL_LIMIT=5=1G", NULL, "names GPU '5'"},
	    {"VRAMCTL_LIMIT=1=1G", "CUDA_VISIBLE_DEVICES=1", "names GPU '1'"},
	    {"VRAMCTL_LIMIT=GPU-deadbeef=1G", NULL, "names GPU 'GPU-deadbeef'"},
	    {"VRAMCTL_LIMIT=8G,GPU-00000000-1111-2222-3333-444444444444=1G",
	     "CUDA_VISIBLE_DEVICES=0", "names GPU 'GPU-00000000-1111-2222-3333-444444444444'"},
	};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		const char *env[] = {unknown[i][0], unknown[i][1], NULL};
		ASSERT_EQ(ht_run("unknown", env), 0);
		ASSERT_EQ(ht_err_count("unknown", unknown[i][2]), 1);
		ASSERT_EQ(
		    ht_err_count("unknown", "every device allocation is refused (fail closed)"), 1);
	}
	/* A UUID of a GPU that CUDA_VISIBLE_DEVICES hides is no error. */
	CUdevice d0;
	char uuid0[64], both[256];
	ASSERT_CU(cuDeviceGet(&d0, 0), CUDA_SUCCESS);
	ht_uuid_text(d0, uuid0, sizeof uuid0);
	snprintf(both, sizeof both, "VRAMCTL_LIMIT=%s=2G,%s=1G", uuid0, uuid);
	const char *hidden[] = {"CUDA_VISIBLE_DEVICES=1", both, NULL};
	ASSERT_EQ(ht_run("visible", hidden), 0);
	ASSERT_EQ(ht_err_count("visible", "fail closed"), 0);
	return 0;
}
