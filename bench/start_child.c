/*
 * start_child - the command start_bench starts 256 at once: a CUDA program
 * that does the least that makes it a member of its group under vramctl
 * (cuInit, a context, one 1 MiB cuMemAlloc_v2 and its cuMemFree_v2) and
 * exits. Run on the do-nothing driver (bench/alloc_bench_driver.c), so that
 * what is measured is process start plus what vramctl adds to it. With
 * START_CHILD_ANY set it exits 0 whatever the allocation's answer
 * (guarantee_storm.sh: a borrow refused while NVML is still loading is an
 * answer too).
 */
#include <stdlib.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return 1;
	if (cuMemAlloc_v2(&p, 1 << 20) != CUDA_SUCCESS)
		return getenv("START_CHILD_ANY") ? 0 : 1;
	return cuMemFree_v2(p) == CUDA_SUCCESS ? 0 : 1;
}
