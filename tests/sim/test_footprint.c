/*
 * test_footprint.c - a process's whole footprint on the card, as nvidia-smi
 * counts it: NVML's per-process usedGpuMemory, NVML's used and the driver's
 * cuMemGetInfo all count the context (VRAMSIM_CONTEXT_BYTES), what the
 * driver takes unasked (VRAMSIM_HIDDEN_BYTES), the context's limits
 * (DESIGN.md section 9: a 1 KiB stack more is 264 MiB on a 132-SM Hopper),
 * modules, what the driver takes mid-run (vramsim_take) and allocations. And VRAMSIM_NVML_LAG_MS:
 * NVML's figures trail, in this process and across processes.
 */
#include "simtest.h"

#include "sim/cuda_extra.h"

#include <string.h>
#include <time.h>

static nvmlDevice_t dev0(void)
{
	nvmlDevice_t d;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	return d;
}

/* NVML's figure for process pid, or -1 when NVML does not list it. */
static long long nvml_proc(pid_t pid)
{
	nvmlProcessInfo_t infos[8];
	unsigned int n = 8;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &n, infos), NVML_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		if (infos[i].pid == (unsigned)pid)
			return (long long)infos[i].usedGpuMemory;
	return -1;
}

/* NVML's used for the card (v2: without the driver's reserve). */
static unsigned long long nvml_used(void)
{
	nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
	ASSERT_CU(nvmlDeviceGetMemoryInfo_v2(dev0(), &m), NVML_SUCCESS);
	ASSERT_UEQ(m.used + m.free, m.total - m.reserved);
	return m.used;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* All three views agree on this process's footprint. */
static void expect_footprint(unsigned long long bytes)
{
	ASSERT_UEQ(sim_used(), bytes);
	ASSERT_EQ(nvml_proc(getpid()), (long long)bytes);
	ASSERT_UEQ(nvml_used(), bytes);
	nvmlMemory_t v1;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(dev0(), &v1), NVML_SUCCESS);
	ASSERT_UEQ(v1.used, bytes + 64 * MiB); /* and the driver's reserve */
}

/* VRAMSIM_HIDDEN_BYTES=10M, VRAMSIM_MODULE_BYTES=2M (default), lazy. */
static int child_whole(void)
{
	CUmodule m;
	CUfunction f;
	CUdeviceptr p;
	CUcontext c, primary;
	unsigned long long want;

	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_EQ(nvml_proc(getpid()), -1);
	ASSERT_UEQ(nvml_used(), 0);
	ASSERT_CU(vramsim_take(0, MiB), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(vramsim_take(0, MiB), CUDA_ERROR_INVALID_CONTEXT); /* no context yet */
	primary = sim_setup();
	want = 64 * MiB + 10 * MiB; /* the context, and what the driver took with it */
	expect_footprint(want);

	/* The limits: the heap and FIFO themselves, the stack for every
	 * resident thread. */
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16 * MiB), CUDA_SUCCESS);
	want += 8 * MiB;
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 3 * MiB), CUDA_SUCCESS);
	want += 2 * MiB;
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048), CUDA_SUCCESS);
	want += 264 * MiB;
	expect_footprint(want);

	/* A module's image, below every allocation call. */
	ASSERT_CU(cuModuleLoadData(&m, "image"), CUDA_SUCCESS);
	ASSERT_CU(cuModuleGetFunction(&f, m, "kernel"), CUDA_SUCCESS);
	want += 2 * MiB;
	expect_footprint(want);

	ASSERT_CU(cuMemAlloc_v2(&p, 100 * MiB), CUDA_SUCCESS);
	want += 100 * MiB;
	expect_footprint(want);

	/* What the driver takes mid-run, asked by no entry point. */
	ASSERT_CU(vramsim_take(0, 30 * MiB), CUDA_SUCCESS);
	expect_footprint(want + 30 * MiB);
	ASSERT_CU(vramsim_take(0, -10 * (long long)MiB), CUDA_SUCCESS);
	expect_footprint(want + 20 * MiB);
	ASSERT_CU(vramsim_take(0, 20 * (long long)GiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(vramsim_take(1, MiB), CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(vramsim_take(0, -1000 * (long long)MiB), CUDA_SUCCESS); /* up to what it took */
	expect_footprint(want);
	ASSERT_CU(vramsim_take(0, 4 * MiB), CUDA_SUCCESS);
	want += 4 * MiB; /* goes with the context, below */

	/* Each context takes the hidden bytes too, and gives them back. */
	ASSERT_CU(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
	expect_footprint(want + 74 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);
	expect_footprint(want);

	/* The limits go back with the context (the FIFO too); then the
	 * process is no longer listed. */
	ASSERT_CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 * MiB), CUDA_SUCCESS);
	expect_footprint(want - 2 * MiB);
	ASSERT_CU(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
	ASSERT_EQ(nvml_proc(getpid()), -1);
	ASSERT_UEQ(nvml_used(), 0);
	ASSERT_CU(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* VRAMSIM_HIDDEN_BYTES=17G: the context cannot be made. */
static int child_hidden_big(void)
{
	CUcontext ctx;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_OUT_OF_MEMORY);
	return 0;
}

/* VRAMSIM_NVML_LAG_MS=500: NVML sees each process as it was 500 ms ago,
 * the driver sees it now. */
static int child_lag(void)
{
	CUdeviceptr p;
	int up[2], down[2];
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	sim_setup();
	/* Just come: listed, but 500 ms ago it held nothing. */
	ASSERT_EQ(nvml_proc(getpid()), 0);
	ASSERT_UEQ(nvml_used(), 0);
	ASSERT_UEQ(sim_used(), 64 * MiB);
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB));
	ASSERT_UEQ(nvml_used(), 64 * MiB);

	ASSERT_CU(cuMemAlloc_v2(&p, 100 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), 164 * MiB);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB));
	ASSERT_UEQ(nvml_used(), 64 * MiB);
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(164 * MiB));
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(164 * MiB));
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB));

	/* Another process: the card file keeps its history for every reader. */
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		CUdeviceptr q;
		sim_setup();
		if (cuMemAlloc_v2(&q, 50 * MiB) != CUDA_SUCCESS)
			_exit(3);
		if (write(up[1], "x", 1) != 1)
			_exit(4);
		sim_wait_byte(down[0]);
		_exit(0);
	}
	ASSERT_EQ(sim_wait_byte(up[0]), 'x');
	ASSERT_UEQ(sim_used(), 64 * MiB + 114 * MiB);
	ASSERT_EQ(nvml_proc(pid), 0);
	ASSERT_UEQ(nvml_used(), 64 * MiB);
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(pid), (long long)(114 * MiB));
	ASSERT_UEQ(nvml_used(), 178 * MiB);
	ASSERT_EQ(write(down[1], "x", 1), 1);
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Gone: NVML no longer lists it (the lag is on figures, not on the
	 * list). */
	ASSERT_EQ(nvml_proc(pid), -1);
	ASSERT_UEQ(nvml_used(), 64 * MiB);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

/* More changes within the lag than a slot remembers: the oldest one kept. */
static int child_lag_ring(void)
{
	CUdeviceptr p[40];
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	sim_setup();
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB));
	/* 80 changes of a page each: the slot keeps the last 64, from 64 +
	 * 16 pages. */
	for (int i = 0; i < 40; i++)
		ASSERT_CU(cuMemAlloc_v2(&p[i], 2 * MiB), CUDA_SUCCESS);
	for (int i = 0; i < 40; i++)
		ASSERT_CU(cuMemFree_v2(p[i]), CUDA_SUCCESS);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB + 34 * MiB));
	sleep_ms(700);
	ASSERT_EQ(nvml_proc(getpid()), (long long)(64 * MiB));
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2 && strcmp(argv[1], "whole") == 0)
		return child_whole();
	if (argc == 2 && strcmp(argv[1], "hidden-big") == 0)
		return child_hidden_big();
	if (argc == 2 && strcmp(argv[1], "lag") == 0)
		return child_lag();
	if (argc == 2 && strcmp(argv[1], "lag-ring") == 0)
		return child_lag_ring();

	const char *whole[] = {"VRAMSIM_HIDDEN_BYTES=10M", NULL};
	ASSERT_EQ(sim_run_self("whole", whole), 0);
	const char *big[] = {"VRAMSIM_HIDDEN_BYTES=17G", NULL};
	ASSERT_EQ(sim_run_self("hidden-big", big), 0);
	const char *lag[] = {"VRAMSIM_NVML_LAG_MS=500", NULL};
	ASSERT_EQ(sim_run_self("lag", lag), 0);
	ASSERT_EQ(sim_run_self("lag-ring", lag), 0);
	return 0;
}
