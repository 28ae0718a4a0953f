/*
 * test_multiproc.c - processes on one simulated card see each other's usage
 * (cuMemGetInfo_v2 and NVML), a killed process's memory returns to the card,
 * and IPC handles opened in another process add no usage.
 */
#include "simtest.h"

#include <string.h>

/* The NVML usage of pid on device 0, or -1 when it is not listed. */
static long long nvml_usage(unsigned int pid)
{
	nvmlDevice_t d;
	nvmlProcessInfo_t infos[16];
	unsigned int n = 16;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, infos), NVML_SUCCESS);
	for (unsigned int i = 0; i < n; i++)
		if (infos[i].pid == pid)
			return (long long)infos[i].usedGpuMemory;
	return -1;
}

int main(void)
{
	CUdeviceptr p;
	CUipcMemHandle ipc;
	int up[2], down[2], st;

	REQUIRE_SIM();
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_EQ(nvml_usage((unsigned)getpid()), -1); /* no context yet */
	sim_setup();
	ASSERT_CU(cuMemAlloc_v2(&p, 1 * GiB), CUDA_SUCCESS);
	unsigned long long mine = 64 * MiB + 1 * GiB;
	ASSERT_UEQ(sim_used(), mine);
	ASSERT_EQ(nvml_usage((unsigned)getpid()), (long long)mine);
	ASSERT_CU(cuIpcGetMemHandle(&ipc, p), CUDA_SUCCESS);
	CUdeviceptr self;
	ASSERT_CU(cuIpcOpenMemHandle_v2(&self, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
	          CUDA_ERROR_INVALID_CONTEXT); /* not in the exporting process */

	/* A second process: it sees us, we see it. */
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		CUdeviceptr q, o, o2;
		close(up[0]);
		close(down[1]);
		sim_setup();
		ASSERT_UEQ(sim_used(), mine + 64 * MiB);
		ASSERT_CU(cuMemAlloc_v2(&q, 2 * GiB), CUDA_SUCCESS);
		/* Opening the parent's allocation adds nothing. */
		ASSERT_CU(cuIpcOpenMemHandle_v2(&o, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
		          CUDA_SUCCESS);
		ASSERT_CU(cuIpcOpenMemHandle_v2(&o2, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
		          CUDA_SUCCESS);
		ASSERT_UEQ(o, o2);
		ASSERT_UEQ(sim_used(), mine + 64 * MiB + 2 * GiB);
		ASSERT_CU(cuMemFree_v2(o), CUDA_ERROR_INVALID_VALUE);
		ASSERT_CU(cuIpcCloseMemHandle(o), CUDA_SUCCESS);
		ASSERT_CU(cuIpcCloseMemHandle(o), CUDA_SUCCESS);
		ASSERT_CU(cuIpcCloseMemHandle(o), CUDA_ERROR_INVALID_VALUE);
		ASSERT_EQ(write(up[1], "a", 1), 1);
		sim_wait_byte(down[0]); /* parent has looked */
		ASSERT_CU(cuMemFree_v2(q), CUDA_SUCCESS);
		ASSERT_EQ(write(up[1], "b", 1), 1);
		sim_wait_byte(down[0]); /* parent has looked; now die holding 3 GiB */
		ASSERT_CU(cuMemAlloc_v2(&q, 3 * GiB), CUDA_SUCCESS);
		ASSERT_EQ(write(up[1], "c", 1), 1);
		for (;;)
			pause();
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ(sim_wait_byte(up[0]), 'a');
	ASSERT_UEQ(sim_used(), mine + 64 * MiB + 2 * GiB);
	ASSERT_EQ(nvml_usage((unsigned)pid), (long long)(64 * MiB + 2 * GiB));
	ASSERT_EQ(nvml_usage((unsigned)getpid()), (long long)mine);
	nvmlDevice_t dev;
	nvmlMemory_t mem;
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &dev), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(dev, &mem), NVML_SUCCESS);
	/* v1's used holds what the driver reserves (64 MiB of 16 GiB) */
	ASSERT_UEQ(mem.used, mine + 64 * MiB + 2 * GiB + 64 * MiB);
	ASSERT_UEQ(mem.free, 16 * GiB - (mine + 64 * MiB + 2 * GiB));
	/* The other process's allocation can make ours fail. */
	CUdeviceptr r;
	ASSERT_CU(cuMemAlloc_v2(&r, mem.free + 1), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAlloc_v2(&r, mem.free), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(r), CUDA_SUCCESS);
	ASSERT_EQ(write(down[1], "x", 1), 1);
	ASSERT_EQ(sim_wait_byte(up[0]), 'b');
	ASSERT_UEQ(sim_used(), mine + 64 * MiB);
	ASSERT_EQ(write(down[1], "y", 1), 1);
	ASSERT_EQ(sim_wait_byte(up[0]), 'c');
	ASSERT_UEQ(sim_used(), mine + 64 * MiB + 3 * GiB);
	/* Killed: the kernel drops its lock, its memory returns to the card. */
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFSIGNALED(st));
	ASSERT_UEQ(sim_used(), mine);
	ASSERT_EQ(nvml_usage((unsigned)pid), -1);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(dev, &mem), NVML_SUCCESS);
	ASSERT_UEQ(mem.used, mine + 64 * MiB);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	return 0;
}
