/*
 * test_nvml.c - the simulated NVML: init refcount, devices (physical
 * numbering, CUDA_VISIBLE_DEVICES ignored), versions, memory info with the
 * v2 version word, running processes in the v1/v2/v3 layouts with the
 * NVML_ERROR_INSUFFICIENT_SIZE protocol, unknown usage, the no-v3 build.
 */
#include "simtest.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "common/size.h"

static nvmlDevice_t dev0(void)
{
	nvmlDevice_t d;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	return d;
}

static int child_physical(void)
{
	unsigned int n;
	nvmlDevice_t d;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	ASSERT_EQ(n, 3);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetName(d, name, sizeof(name)), NVML_SUCCESS);
	ASSERT_STR_EQ(name, "NVIDIA Simulated GPU 80GB");
	nvmlMemory_t m;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
	ASSERT_UEQ(m.total, 80 * GiB + 320 * MiB); /* with the driver's reserve */
	/* The driver renumbers: its device 0 is NVML's 2. */
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	int cn;
	ASSERT_CU(cuDeviceGetCount(&cn), CUDA_SUCCESS);
	ASSERT_EQ(cn, 1);
	CUuuid u;
	char want[64], got[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	ASSERT_CU(cuDeviceGetUuid_v2(&u, 0), CUDA_SUCCESS);
	vr_format_uuid((const unsigned char *)u.bytes, want, sizeof(want));
	ASSERT_CU(nvmlDeviceGetUUID(d, got, sizeof(got)), NVML_SUCCESS);
	ASSERT_STR_EQ(got, want);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

static int child_unknown(void)
{
	nvmlProcessInfo_t infos[4];
	nvmlProcessInfo_v1_t v1[4];
	unsigned int n = 4;
	sim_setup();
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, infos), NVML_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(infos[0].pid, getpid());
	ASSERT_UEQ(infos[0].usedGpuMemory, NVML_VALUE_NOT_AVAILABLE);
	ASSERT_UEQ(infos[0].usedGpuMemory, ULLONG_MAX);
	n = 4;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses(dev0(), &n, v1), NVML_SUCCESS);
	ASSERT_UEQ(v1[0].usedGpuMemory, ULLONG_MAX);
	/* Memory info still knows the card's usage. */
	nvmlMemory_t m;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(dev0(), &m), NVML_SUCCESS);
	ASSERT_UEQ(m.used, 64 * MiB + 64 * MiB); /* the context, and the driver's reserve */
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* VRAMSIM_CONTEXT_BYTES=0: a process with a context is listed, using 0. */
static int child_ctx0(void)
{
	nvmlProcessInfo_t infos[4];
	unsigned int n = 4;
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, infos), NVML_SUCCESS);
	ASSERT_EQ(n, 0);
	sim_setup();
	ASSERT_UEQ(sim_used(), 0);
	n = 4;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, infos), NVML_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(infos[0].pid, getpid());
	ASSERT_UEQ(infos[0].usedGpuMemory, 0);
	/* Released: no longer listed. */
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
	n = 4;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, infos), NVML_SUCCESS);
	ASSERT_EQ(n, 0);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* The build without nvmlDeviceGetComputeRunningProcesses_v3. */
static void check_no_v3(void)
{
	char path[1024];
	const char *b = getenv("VR_BUILD");
	ASSERT(b != NULL);
	snprintf(path, sizeof(path), "%s/sim/nvml-no-v3/libnvidia-ml.so.1", b);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ASSERT(h != NULL);
	ASSERT(dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3") == NULL);
	vr_pfn_nvmlInit_v2 init = (vr_pfn_nvmlInit_v2)dlsym(h, "nvmlInit_v2");
	vr_pfn_nvmlDeviceGetHandleByIndex_v2 byidx =
	    (vr_pfn_nvmlDeviceGetHandleByIndex_v2)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	vr_pfn_nvmlDeviceGetComputeRunningProcesses_v2 v2 =
	    (vr_pfn_nvmlDeviceGetComputeRunningProcesses_v2)dlsym(
	        h, "nvmlDeviceGetComputeRunningProcesses_v2");
	vr_pfn_nvmlShutdown shut = (vr_pfn_nvmlShutdown)dlsym(h, "nvmlShutdown");
	ASSERT(init && byidx && v2 && shut);
	nvmlDevice_t d;
	nvmlProcessInfo_v2_t infos[8];
	unsigned int n = 8;
	ASSERT_CU(init(), NVML_SUCCESS);
	ASSERT_CU(byidx(0, &d), NVML_SUCCESS);
	ASSERT_CU(v2(d, &n, infos), NVML_SUCCESS);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(infos[0].pid, getpid());
	ASSERT_CU(shut(), NVML_SUCCESS);
	dlclose(h);
}

int main(int argc, char **argv)
{
	unsigned int n, idx;
	nvmlDevice_t d, d2;
	char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	int cuver;

	REQUIRE_SIM();
	if (argc == 2 && strcmp(argv[1], "physical") == 0)
		return child_physical();
	if (argc == 2 && strcmp(argv[1], "unknown") == 0)
		return child_unknown();
	if (argc == 2 && strcmp(argv[1], "ctx0") == 0)
		return child_ctx0();

	/* Layouts as nvml.h has them. */
	ASSERT_EQ(sizeof(nvmlProcessInfo_v1_t), 16);
	ASSERT_EQ(sizeof(nvmlProcessInfo_v2_t), 24);
	ASSERT_EQ(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), 16);
	ASSERT_EQ(sizeof(nvmlMemory_v2_t), 40);
	ASSERT_EQ(nvmlMemory_v2, 0x02000028);

	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	ASSERT_CU(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlInitWithFlags(0), NVML_SUCCESS);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS); /* still one reference */
	ASSERT_EQ(n, 1);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(1, &d), NVML_ERROR_INVALID_ARGUMENT);
	d = dev0();
	ASSERT_CU(nvmlDeviceGetIndex(d, &idx), NVML_SUCCESS);
	ASSERT_EQ(idx, 0);
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	ASSERT_CU(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)), NVML_SUCCESS);
	ASSERT(strncmp(uuid, "GPU-", 4) == 0);
	ASSERT_CU(nvmlDeviceGetUUID(d, uuid, 10), NVML_ERROR_INSUFFICIENT_SIZE);
	ASSERT_CU(nvmlDeviceGetHandleByUUID(uuid, &d2), NVML_SUCCESS);
	ASSERT(d == d2);
	ASSERT_CU(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &d2),
	          NVML_ERROR_NOT_FOUND);
	ASSERT_CU(nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_SUCCESS);
	ASSERT(strlen(buf) > 0);
	ASSERT_CU(nvmlSystemGetCudaDriverVersion(&cuver), NVML_SUCCESS);
	ASSERT_EQ(cuver, 13000);
	ASSERT_CU(nvmlSystemGetCudaDriverVersion_v2(&cuver), NVML_SUCCESS);
	ASSERT_EQ(cuver, 13000);
	ASSERT_STR_EQ(nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");

	/* Memory info, both forms; v2 checks the version word. */
	nvmlMemory_t m;
	nvmlMemory_v2_t m2;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
	/* NVML's total and used hold what the driver reserves (a 256th
	 * here), which cuDeviceTotalMem leaves out; free is the driver's. */
	ASSERT_UEQ(m.total, 16 * GiB + 64 * MiB);
	ASSERT_UEQ(m.used, 64 * MiB);
	ASSERT_UEQ(m.free, 16 * GiB);
	memset(&m2, 0, sizeof(m2));
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	m2.version = sizeof(nvmlMemory_v2_t) | 1u << 24;
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	m2.version = nvmlMemory_v2;
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_SUCCESS);
	ASSERT_UEQ(m2.total, 16 * GiB + 64 * MiB);
	ASSERT_UEQ(m2.reserved, 64 * MiB);
	ASSERT_UEQ(m2.used, 0);
	ASSERT_UEQ(m2.free + m2.used + m2.reserved, m2.total);

	/* No processes: count 0, success, even with NULL infos. */
	n = 0;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL), NVML_SUCCESS);
	ASSERT_EQ(n, 0);

	/* Two processes: us and a child. */
	sim_setup();
	CUdeviceptr p;
	ASSERT_CU(cuMemAlloc_v2(&p, 1 * GiB), CUDA_SUCCESS);
	int up[2], down[2];
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		CUdeviceptr q;
		close(up[0]);
		close(down[1]);
		sim_setup();
		ASSERT_CU(cuMemAlloc_v2(&q, 2 * GiB), CUDA_SUCCESS);
		ASSERT_EQ(write(up[1], "r", 1), 1);
		sim_wait_byte(down[0]);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ(sim_wait_byte(up[0]), 'r');

	/* Asking for the size: NULL with 0, and too small a buffer. */
	n = 0;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL),
	          NVML_ERROR_INSUFFICIENT_SIZE);
	ASSERT_EQ(n, 2);
	nvmlProcessInfo_t v3[2];
	n = 1;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, v3), NVML_ERROR_INSUFFICIENT_SIZE);
	ASSERT_EQ(n, 2);
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, NULL, v3),
	          NVML_ERROR_INVALID_ARGUMENT);
	/* All three layouts. */
	unsigned long long mine = 64 * MiB + 1 * GiB, theirs = 64 * MiB + 2 * GiB;
	n = 2;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, v3), NVML_SUCCESS);
	ASSERT_EQ(n, 2);
	for (int i = 0; i < 2; i++) {
		ASSERT(v3[i].pid == (unsigned)getpid() || v3[i].pid == (unsigned)pid);
		ASSERT_UEQ(v3[i].usedGpuMemory, v3[i].pid == (unsigned)pid ? theirs : mine);
		ASSERT_UEQ(v3[i].gpuInstanceId, 0xFFFFFFFFu);
		ASSERT_UEQ(v3[i].computeInstanceId, 0xFFFFFFFFu);
	}
	nvmlProcessInfo_v2_t v2[3];
	memset(v2, 0x77, sizeof(v2));
	n = 3;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v2(d, &n, v2), NVML_SUCCESS);
	ASSERT_EQ(n, 2);
	ASSERT_UEQ(v2[0].usedGpuMemory + v2[1].usedGpuMemory, mine + theirs);
	ASSERT_EQ(v2[2].pid, 0x77777777); /* untouched past the count */
	nvmlProcessInfo_v1_t v1[2];
	n = 2;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses(d, &n, v1), NVML_SUCCESS);
	ASSERT_EQ(n, 2);
	for (int i = 0; i < 2; i++)
		ASSERT_UEQ(v1[i].usedGpuMemory, v1[i].pid == (unsigned)pid ? theirs : mine);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
	ASSERT_UEQ(m.used, mine + theirs + 64 * MiB); /* and the driver's reserve */
	ASSERT_EQ(write(down[1], "q", 1), 1);
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	n = 2;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, v3), NVML_SUCCESS);
	ASSERT_EQ(n, 1);

	check_no_v3();
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);

	const char *phys[] = {"VRAMSIM_DEVICES=16G,8G,80G", "CUDA_VISIBLE_DEVICES=2", NULL};
	ASSERT_EQ(sim_run_self("physical", phys), 0);
	const char *unk[] = {"VRAMSIM_NVML_UNKNOWN_USAGE=1",
	                     "VRAMSIM_UUIDS=GPU-12121212-0000-0000-0000-000000000000", NULL};
	ASSERT_EQ(sim_run_self("unknown", unk), 0);
	const char *ctx0[] = {"VRAMSIM_CONTEXT_BYTES=0",
	                      "VRAMSIM_UUIDS=GPU-34343434-0000-0000-0000-000000000000", NULL};
	ASSERT_EQ(sim_run_self("ctx0", ctx0), 0);
	return 0;
}
