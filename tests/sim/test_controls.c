/*
 * test_controls.c - the simulator's test controls and configuration:
 * VRAMSIM_FAULT (the Nth call, or from the Nth on, fails with a code),
 * VRAMSIM_STOP (the Nth call stops the process before doing anything),
 * VRAMSIM_SLOW, VRAMSIM_DEVICES/UUIDS/NAME/DRIVER_VERSION/CONTEXT_BYTES,
 * CUDA_VISIBLE_DEVICES renumbering, and bad values that must not crash.
 * Each case runs this program again with its own environment.
 */
#include "simtest.h"

#include <string.h>
#include <time.h>

static int child_fault(void)
{
	CUdeviceptr p[4];
	ASSERT_CU(cuInit(0), CUDA_ERROR_NOT_INITIALIZED); /* cuInit:1:3 */
	sim_setup();
	ASSERT_CU(cuMemAlloc_v2(&p[0], 2 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&p[1], 2 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&p[2], 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY); /* 3rd */
	ASSERT_CU(cuMemAlloc_v2(&p[2], 2 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p[0]), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p[1]), CUDA_ERROR_UNKNOWN); /* 2nd and after */
	ASSERT_CU(cuMemFree_v2(p[1]), CUDA_ERROR_UNKNOWN);
	/* A failed call did nothing: p[1] and p[2] are still charged. */
	ASSERT_UEQ(sim_used(), 64 * MiB + 4 * MiB);
	/* NVML names in the same variable belong to the NVML library. */
	unsigned int n = 0;
	ASSERT_CU(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNKNOWN);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

static int child_badenv(void)
{
	CUdeviceptr p;
	int v;
	sim_setup(); /* defaults kept: one 16 GiB card, 64 MiB contexts */
	ASSERT_UEQ(sim_used(), 64 * MiB);
	ASSERT_CU(cuMemAlloc_v2(&p, 1 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_CU(cuDriverGetVersion(&v), CUDA_SUCCESS);
	ASSERT_EQ(v, 13000);
	return 0;
}

/* A state directory that cannot be used: clean errors, no crash. */
static int child_statedir(void)
{
	CUdeviceptr p;
	ASSERT_CU(cuInit(0), CUDA_ERROR_UNKNOWN);
	ASSERT_CU(cuMemAlloc_v2(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
	ASSERT_CU(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	return 0;
}

static int child_slow(void)
{
	struct timespec a, b;
	size_t f, t;
	sim_setup();
	clock_gettime(CLOCK_MONOTONIC, &a);
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	clock_gettime(CLOCK_MONOTONIC, &b);
	/* A lower bound only: sleeping never ends early. */
	long long us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
	ASSERT_GE(us, 20000);
	return 0;
}

static int child_stop(void)
{
	CUdeviceptr p;
	sim_setup();
	ASSERT_CU(cuMemAlloc_v2(&p, 100 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&p, 200 * MiB), CUDA_SUCCESS); /* stops here, before */
	return 3;                                              /* never reached */
}

/* EXPECT = "count:total0,total1,...:name0" against the configuration. */
static int child_config(void)
{
	const char *want = getenv("EXPECT");
	int n = -1, v;
	char name[128];
	CUresult rc = cuInit(0);
	if (strncmp(want, "0:", 2) == 0) {
		ASSERT_CU(rc, CUDA_ERROR_NO_DEVICE);
		ASSERT_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
		return 0;
	}
	ASSERT_CU(rc, CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetCount(&n), CUDA_SUCCESS);
	char got[512];
	int off = snprintf(got, sizeof(got), "%d:", n);
	for (int i = 0; i < n; i++) {
		size_t t;
		ASSERT_CU(cuDeviceTotalMem_v2(&t, i), CUDA_SUCCESS);
		off += snprintf(got + off, sizeof(got) - (size_t)off, "%s%lluG", i ? "," : "",
		                (unsigned long long)(t >> 30));
	}
	ASSERT_CU(cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
	ASSERT_CU(cuDriverGetVersion(&v), CUDA_SUCCESS);
	snprintf(got + off, sizeof(got) - (size_t)off, ":%s:%d", name, v);
	ASSERT_STR_EQ(got, want);
	return 0;
}

static void expect_config(const char *devices, const char *visible, const char *want)
{
	char e1[256], e2[256], e3[256];
	snprintf(e1, sizeof(e1), "VRAMSIM_DEVICES=%s", devices);
	snprintf(e2, sizeof(e2), "CUDA_VISIBLE_DEVICES=%s", visible);
	snprintf(e3, sizeof(e3), "EXPECT=%s", want);
	const char *env[] = {e1,
	                     e2,
	                     e3,
	                     "VRAMSIM_UUIDS=GPU-11111111-2222-3333-4444-555555555555,"
	                     "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee,"
	                     "GPU-abcdef00-0000-0000-0000-000000000000",
	                     "VRAMSIM_NAME=Test GPU",
	                     NULL};
	if (sim_run_self("config", visible ? env : env) != 0)
		TEST_FAILF("CUDA_VISIBLE_DEVICES=\"%s\": expected %s", visible, want);
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2) {
		if (strcmp(argv[1], "fault") == 0)
			return child_fault();
		if (strcmp(argv[1], "badenv") == 0)
			return child_badenv();
		if (strcmp(argv[1], "slow") == 0)
			return child_slow();
		if (strcmp(argv[1], "statedir") == 0)
			return child_statedir();
		if (strcmp(argv[1], "stop") == 0)
			return child_stop();
		if (strcmp(argv[1], "config") == 0)
			return child_config();
		return 2;
	}

	const char *fault[] = {
	    "VRAMSIM_FAULT=cuMemAlloc_v2:3:CUDA_ERROR_OUT_OF_MEMORY,cuMemFree_v2:2+:999,"
	    "cuInit:1:3,nvmlInit_v2:1:NVML_ERROR_DRIVER_NOT_LOADED,nvmlDeviceGetCount_v2:2+:999",
	    NULL};
	ASSERT_EQ(sim_run_self("fault", fault), 0);
	const char *bad[] = {
	    "VRAMSIM_FAULT=garbage,cuNoSuch:1:2,cuMemAlloc_v2:0:2,cuMemAlloc_v2:x:y,"
	    "cuMemAlloc_v2:1,cuMemAlloc_v2:1:CUDA_ERROR_NOPE,nvmlInit_v2:1:NVML_NOPE",
	    "VRAMSIM_SLOW=cuMemAlloc_v2:abc",
	    "VRAMSIM_STOP=cuInit:0",
	    "VRAMSIM_DEVICES=lots",
	    "VRAMSIM_CONTEXT_BYTES=-5",
	    "VRAMSIM_DRIVER_VERSION=new",
	    "VRAMSIM_UUIDS=GPU-xyz",
	    NULL};
	ASSERT_EQ(sim_run_self("badenv", bad), 0);
	const char *nodir[] = {"VRAMSIM_STATE_DIR=/proc/vramsim-cannot-exist", NULL};
	ASSERT_EQ(sim_run_self("statedir", nodir), 0);
	const char *slow[] = {"VRAMSIM_SLOW=cuMemGetInfo_v2:20000", NULL};
	ASSERT_EQ(sim_run_self("slow", slow), 0);

	/* Stop inside the 2nd cuMemAlloc_v2, look at the card, kill it there. */
	sim_setup();
	unsigned long long base = sim_used();
	pid_t pid = fork();
	int st;
	ASSERT(pid >= 0);
	if (pid == 0) {
		static char stop[] = "VRAMSIM_STOP=cuMemAlloc_v2:2";
		putenv(stop);
		execl("/proc/self/exe", "simtest-child", "stop", (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(waitpid(pid, &st, WUNTRACED), pid);
	ASSERT(WIFSTOPPED(st));
	ASSERT_UEQ(sim_used(), base + 64 * MiB + 100 * MiB);
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ASSERT_UEQ(sim_used(), base);

	/* Configuration and CUDA_VISIBLE_DEVICES (ordinals, UUID prefixes; the
	 * first invalid entry hides the rest). */
	expect_config("16G,8G,80G", "0,1,2", "3:16G,8G,80G:Test GPU:13000");
	expect_config("16G,8G,80G", "2,0", "2:80G,16G:Test GPU:13000");
	expect_config("16G,8G,80G", "1,7,2", "1:8G:Test GPU:13000");
	expect_config("16G,8G,80G", "1,1,2", "1:8G:Test GPU:13000");
	expect_config("16G,8G,80G", " 2 , 1", "2:80G,8G:Test GPU:13000");
	expect_config("16G,8G,80G", "GPU-abcdef,0", "2:80G,16G:Test GPU:13000");
	expect_config("16G,8G,80G", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
	              "1:8G:Test GPU:13000");
	expect_config("16G,8G,80G", "GPU-a,0", "0:"); /* ambiguous prefix */
	expect_config("16G,8G,80G", "MIG-GPU-11111111/1/0", "0:");
	expect_config("16G,8G,80G", "", "0:");
	expect_config("16G,8G,80G", "-1", "0:");
	expect_config("512M,1T", "1", "1:1024G:Test GPU:13000");
	const char *ver[] = {"VRAMSIM_UUIDS=GPU-99999999-0000-0000-0000-000000000000",
	                     "VRAMSIM_DRIVER_VERSION=12040",
	                     "VRAMSIM_DEVICES=8G",
	                     "EXPECT=1:8G:Test GPU:12040",
	                     "VRAMSIM_NAME=Test GPU",
	                     NULL};
	ASSERT_EQ(sim_run_self("config", ver), 0);
	return 0;
}
