/*
 * simtest.h - helpers shared by the simulator's own tests: bring up a
 * context, read the card's usage, and run this same program again in a child
 * process with a different environment (the simulator reads its environment
 * once per process).
 */
#ifndef VRAMSIM_SIMTEST_H
#define VRAMSIM_SIMTEST_H

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "common/cuda_api.h"
#include "common/nvml_api.h"
#include "test.h"
#include "cudatest.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static inline size_t sim_round_up_test(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* cuInit, device 0's primary context retained and made current. */
static inline CUcontext sim_setup(void)
{
	CUcontext ctx;
	CUdevice dev;
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	return ctx;
}

/* Bytes in use on the current context's card, all processes together. */
static inline unsigned long long sim_used(void)
{
	size_t free_bytes, total;
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	return (unsigned long long)(total - free_bytes);
}

/*
 * Runs this program again as "argv0 mode" with the given NAME=VALUE settings
 * added to the environment (NULL-terminated); returns its exit status, or
 * 128 + signal.
 */
static inline int sim_run_self(const char *mode, const char *const *env)
{
	pid_t pid = fork();
	int st;
	ASSERT(pid >= 0);
	if (pid == 0) {
		for (; env && *env; env++)
			putenv((char *)*env);
		execl("/proc/self/exe", "simtest-child", mode, (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* Reads exactly one byte from fd (a pipe from a child); fails the test on EOF. */
static inline char sim_wait_byte(int fd)
{
	char c;
	ASSERT_EQ(read(fd, &c, 1), 1);
	return c;
}

#endif /* VRAMSIM_SIMTEST_H */
