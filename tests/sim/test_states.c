/*
 * test_states.c - the machine states the simulator can be put into for
 * `vramctl doctor`: the libraries' and kernel module's releases and their
 * mismatch (cuInit 803, nvmlInit NVML_ERROR_LIB_RM_VERSION_MISMATCH), compute
 * mode (CUDA attribute and NVML agree), MIG and persistence modes per device,
 * a device that fails to initialise, and bad values kept at the defaults.
 * Each case runs this program again with its own environment.
 */
#include "simtest.h"

#include <string.h>

static int child_mismatch(void)
{
	ASSERT_CU(cuInit(0), CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
	ASSERT_CU(nvmlInit_v2(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
	ASSERT_CU(nvmlInitWithFlags(0), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
	return 0;
}

static int child_release(void)
{
	char text[80];
	sim_setup();
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlSystemGetDriverVersion(text, sizeof(text)), NVML_SUCCESS);
	ASSERT_STR_EQ(text, "550.54.14");
	ASSERT_CU(nvmlSystemGetNVMLVersion(text, sizeof(text)), NVML_SUCCESS);
	ASSERT_STR_EQ(text, "12.550.54.14");
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* Three cards: compute modes 3, 2, 0; MIG 0, 1, 0; persistence 1, 0, 0. */
static int child_modes(void)
{
	static const int compute[] = {3, 2, 0}, mig[] = {0, 1, 0}, persist[] = {1, 0, 0};
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	for (int i = 0; i < 3; i++) {
		int v = -1;
		unsigned cur = 9, pend = 9;
		nvmlDevice_t h;
		ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, i),
		          CUDA_SUCCESS);
		ASSERT_EQ(v, compute[i]);
		ASSERT_CU(nvmlDeviceGetHandleByIndex_v2((unsigned)i, &h), NVML_SUCCESS);
		ASSERT_CU(nvmlDeviceGetComputeMode(h, &v), NVML_SUCCESS);
		ASSERT_EQ(v, compute[i]);
		ASSERT_CU(nvmlDeviceGetMigMode(h, &cur, &pend), NVML_SUCCESS);
		ASSERT_EQ((int)cur, mig[i]);
		ASSERT_EQ((int)pend, mig[i]);
		ASSERT_CU(nvmlDeviceGetPersistenceMode(h, &v), NVML_SUCCESS);
		ASSERT_EQ(v, persist[i]);
		ASSERT_CU(nvmlDeviceGetComputeMode(h, NULL), NVML_ERROR_INVALID_ARGUMENT);
		ASSERT_CU(nvmlDeviceGetMigMode(h, &cur, NULL), NVML_ERROR_INVALID_ARGUMENT);
	}
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* Card 1 fails to initialise: no context, NVML cannot open it; card 0 works. */
static int child_broken(void)
{
	CUcontext ctx;
	char uuid[96];
	unsigned n = 0;
	nvmlDevice_t h;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 1), CUDA_ERROR_UNKNOWN);
	ASSERT_CU(cuCtxCreate_v2(&ctx, 0, 1), CUDA_ERROR_UNKNOWN);
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	ASSERT_EQ(n, 2);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(1, &h), NVML_ERROR_UNKNOWN);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &h), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetUUID(h, uuid, sizeof(uuid)), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetHandleByUUID(uuid, &h), NVML_SUCCESS);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* Bad values: one message each, the defaults kept. */
static int child_bad(void)
{
	int v = -1;
	unsigned cur = 9, pend = 9;
	nvmlDevice_t h;
	sim_setup();
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 0), CUDA_SUCCESS);
	ASSERT_EQ(v, 0);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &h), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMigMode(h, &cur, &pend), NVML_SUCCESS);
	ASSERT_EQ((int)cur, 0);
	ASSERT_CU(nvmlDeviceGetPersistenceMode(h, &v), NVML_SUCCESS);
	ASSERT_EQ(v, 1);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2) {
		if (strcmp(argv[1], "mismatch") == 0)
			return child_mismatch();
		if (strcmp(argv[1], "release") == 0)
			return child_release();
		if (strcmp(argv[1], "modes") == 0)
			return child_modes();
		if (strcmp(argv[1], "broken") == 0)
			return child_broken();
		if (strcmp(argv[1], "bad") == 0)
			return child_bad();
		return 2;
	}
	const char *mismatch[] = {"VRAMSIM_KERNEL_RELEASE=575.51.03", NULL};
	ASSERT_EQ(sim_run_self("mismatch", mismatch), 0);
	const char *same[] = {"VRAMSIM_DRIVER_RELEASE=550.54.14",
	                      "VRAMSIM_KERNEL_RELEASE=550.54.14", "VRAMSIM_DRIVER_VERSION=12040",
	                      NULL};
	ASSERT_EQ(sim_run_self("release", same), 0);
	const char *modes[] = {"VRAMSIM_DEVICES=16G,16G,16G",
	                       "VRAMSIM_COMPUTE_MODE=exclusive_process,2", "VRAMSIM_MIG=0,1",
	                       "VRAMSIM_PERSISTENCE=1,0,0", NULL};
	ASSERT_EQ(sim_run_self("modes", modes), 0);
	const char *broken[] = {"VRAMSIM_DEVICES=16G,8G", "VRAMSIM_DEVICE_FAIL=1", NULL};
	ASSERT_EQ(sim_run_self("broken", broken), 0);
	const char *bad[] = {"VRAMSIM_COMPUTE_MODE=sometimes", "VRAMSIM_MIG=2",
	                     "VRAMSIM_PERSISTENCE=1,1",        "VRAMSIM_DEVICE_FAIL=9,x",
	                     "VRAMSIM_KERNEL_RELEASE=new!",    NULL};
	ASSERT_EQ(sim_run_self("bad", bad), 0);
	return 0;
}
