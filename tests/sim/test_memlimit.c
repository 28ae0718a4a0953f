/*
 * test_memlimit.c - the simulated driver's per-cgroup memory limits (R615's
 * nvmlDeviceSetMemoryLimits_v1 / nvmlDeviceGetMemoryLimits_v1): set, read
 * back and cleared through NVML, kept on the card for every process; the
 * hard limit of a cgroup holds the processes of its subtree together,
 * contexts included; cuMemGetInfo (and NVML's v2 memory info) reports it as
 * the total in that very cgroup only (a child's processes see the card's
 * total, and the room left as free); NOT_SUPPORTED before 615 and on MIG,
 * and for a cgroup with no limit set (R615 answers so, #35); the root
 * cgroup cannot be limited; a limit below what the cgroup holds is
 * refused; NO_PERMISSION to non-root.
 */
#include "simtest.h"

#include <string.h>

#define STEP "/sys/fs/cgroup/job_7/step_0"

static nvmlDevice_t dev0(void)
{
	nvmlDevice_t d;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	return d;
}

static nvmlReturn_t set(const char *ns, unsigned long long soft, unsigned long long hard)
{
	nvmlSetMemoryLimits_v1_t l = {.nameSpace = ns, .softLimit = soft, .hardLimit = hard};
	return nvmlDeviceSetMemoryLimits_v1(dev0(), &l);
}

static nvmlGetMemoryLimits_v1_t get(const char *ns)
{
	nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
	ASSERT_CU(nvmlDeviceGetMemoryLimits_v1(dev0(), &l), NVML_SUCCESS);
	return l;
}

/* A cgroup with no limit set: NOT_SUPPORTED, as where none can be. */
static void get_none(const char *ns)
{
	nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
	ASSERT_CU(nvmlDeviceGetMemoryLimits_v1(dev0(), &l), NVML_ERROR_NOT_SUPPORTED);
}

/* Before 615, and on a MIG-enabled card: neither call is supported. */
static int child_unsupported(void)
{
	nvmlGetMemoryLimits_v1_t g = {.nameSpace = STEP};
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(set(STEP, 0, 1ull << 30), NVML_ERROR_NOT_SUPPORTED);
	ASSERT_CU(nvmlDeviceGetMemoryLimits_v1(dev0(), &g), NVML_ERROR_NOT_SUPPORTED);
	return 0;
}

/* Not root: reading is allowed, setting is not. */
static int child_user(void)
{
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(set(STEP, 0, 1ull << 30), NVML_ERROR_NO_PERMISSION);
	get_none(STEP); /* reading is allowed: no limit there */
	return 0;
}

/* In the step's task_0 (VRAMSIM_CGROUP), below the step's limit: the
 * step's limit holds it, but the total it is shown is the card's (only a
 * cgroup's own limit is shown as the device's size); free is the room
 * left; allocate up to it, one byte more fails. Holds its memory until
 * stdin closes. */
static int child_hold(void)
{
	size_t free_bytes, total;
	CUdeviceptr p, q;
	sim_setup(); /* a 64 MiB context */
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(total, 16 * GiB);
	ASSERT_UEQ(free_bytes, 192 * MiB);
	/* NVML's v2 memory info says the same; v1 the card. */
	nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
	nvmlMemory_t m1;
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(dev0(), &m2), NVML_SUCCESS);
	ASSERT(m2.total >= 16 * GiB);
	ASSERT_UEQ(m2.free, 192 * MiB);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(dev0(), &m1), NVML_SUCCESS);
	ASSERT(m1.total > 16 * GiB);
	ASSERT_CU(cuMemAlloc_v2(&p, 128 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&q, 66 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_EQ(write(1, "h", 1), 1);
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* In task_1 beside the holder: its context fills the step's limit (contexts
 * count), so nothing more fits. */
static int child_sibling(void)
{
	CUdeviceptr p;
	size_t free_bytes, total;
	sim_setup();
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(total, 16 * GiB);
	ASSERT_UEQ(free_bytes, 0);
	ASSERT_CU(cuMemAlloc_v2(&p, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	return 0;
}

/* In the step's own cgroup: its limit is shown as the total. */
static int child_leaf(void)
{
	size_t free_bytes, total;
	sim_setup();
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(total, 256 * MiB);
	return 0;
}

/* Outside the step: no limit, the whole card. */
static int child_outside(void)
{
	size_t free_bytes, total;
	CUdeviceptr p;
	sim_setup();
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(total, 16 * GiB);
	ASSERT_CU(cuMemAlloc_v2(&p, 1 * GiB), CUDA_SUCCESS);
	return 0;
}

/* After the limits are cleared: the step may allocate again. */
static int child_cleared(void)
{
	CUdeviceptr p;
	sim_setup();
	ASSERT_CU(cuMemAlloc_v2(&p, 512 * MiB), CUDA_SUCCESS);
	return 0;
}

#define R615 "VRAMSIM_DRIVER_RELEASE=615.20.01"

static int run_in(const char *mode, const char *cgroup)
{
	char cg[128];
	snprintf(cg, sizeof(cg), "VRAMSIM_CGROUP=%s", cgroup);
	const char *env[] = {R615, cg, NULL};
	return sim_run_self(mode, env);
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2) {
		static const struct {
			const char *name;
			int (*fn)(void);
		} modes[] = {{"unsupported", child_unsupported},
		             {"user", child_user},
		             {"hold", child_hold},
		             {"sibling", child_sibling},
		             {"leaf", child_leaf},
		             {"outside", child_outside},
		             {"cleared", child_cleared}};
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			if (!strcmp(argv[1], modes[i].name))
				return modes[i].fn();
		return 2;
	}
	const char *old[] = {"VRAMSIM_DRIVER_RELEASE=580.82.07", NULL};
	ASSERT_EQ(sim_run_self("unsupported", old), 0);
	const char *mig[] = {R615, "VRAMSIM_MIG=1", NULL};
	ASSERT_EQ(sim_run_self("unsupported", mig), 0);
	const char *user[] = {R615, "VRAMSIM_EUID=1000", NULL};
	ASSERT_EQ(sim_run_self("user", user), 0);

	/* This process (root, 615) sets the step's limits through NVML. */
	ASSERT_EQ(setenv("VRAMSIM_DRIVER_RELEASE", "615.20.01", 1), 0);
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(set("/tmp/job_7", 0, 256 * MiB), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(set(STEP, 512 * MiB, 256 * MiB), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_CU(set("/sys/fs/cgroup", 0, 256 * MiB), NVML_ERROR_NOT_SUPPORTED); /* the root */
	get_none(STEP);
	ASSERT_CU(set(STEP "/", 64 * MiB, 256 * MiB), NVML_SUCCESS);
	nvmlGetMemoryLimits_v1_t g = get(STEP);
	ASSERT_UEQ(g.softLimit, 64 * MiB);
	ASSERT_UEQ(g.hardLimit, 256 * MiB);
	ASSERT_UEQ(g.currentUsed, 0);

	/* A holder in task_0; its use shows in the step's (and only there). */
	int to[2], from[2];
	ASSERT_EQ(pipe(to), 0);
	ASSERT_EQ(pipe(from), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		putenv((char *)"VRAMSIM_CGROUP=/job_7/step_0/task_0");
		execl("/proc/self/exe", "simtest-child", "hold", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	ASSERT_EQ(sim_wait_byte(from[0]), 'h');
	g = get(STEP);
	ASSERT_UEQ(g.currentUsed, 192 * MiB);
	get_none("/sys/fs/cgroup/job_7/step_0/task_0"); /* the limit is the step's */
	get_none("/sys/fs/cgroup/other");
	/* Not below what it holds now: refused, the limit as it was. */
	ASSERT_CU(set(STEP, 0, 128 * MiB), NVML_ERROR_INVALID_ARGUMENT);
	ASSERT_UEQ(get(STEP).hardLimit, 256 * MiB);
	ASSERT_EQ(run_in("sibling", "/job_7/step_0/task_1"), 0);
	ASSERT_EQ(run_in("leaf", "/job_7/step_0"), 0);
	ASSERT_EQ(run_in("outside", "/other"), 0);
	/* Cleared as NVIDIA's documentation asks: soft 0, hard "max". */
	ASSERT_CU(set(STEP, 0, NVML_DEVICE_MEMORY_LIMIT_MAX), NVML_SUCCESS);
	get_none(STEP);
	ASSERT_EQ(run_in("cleared", "/job_7/step_0/task_1"), 0);
	close(to[1]);
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}
