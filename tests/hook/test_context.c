/*
 * test_context - context teardown gives back what the driver frees. After
 * cuDevicePrimaryCtxReset (cudaDeviceReset's path), after the last
 * cuDevicePrimaryCtxRelease, and after cuCtxDestroy of a context that still
 * owns allocations, the driver has freed them (the simulator does as a real
 * driver does), and the books must not keep them: under a 1 GiB cap, a
 * 600 MiB block is granted again. A release that is not the last keeps the
 * memory, and counted. Pinned host memory from cuMemAllocHost goes with its
 * context too (NVIDIA's cuCtxDestroy reference; cuMemHostAlloc's is not
 * said to, and stays counted): the process's pinned figure in `vramctl
 * status` follows.
 */
#include "hooktest.h"

static void alloc600(CUresult want)
{
	CUdeviceptr p;
	CUarray a;
	CUDA_ARRAY_DESCRIPTOR d = {
	    .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	ASSERT_CU(cuMemAlloc_v2(&p, 596 * MiB), want);
	if (want == CUDA_SUCCESS)
		ASSERT_CU(cuArrayCreate_v2(&a, &d), CUDA_SUCCESS); /* 4 MiB, owned too */
}

static void set_primary(CUdevice dev)
{
	CUcontext c;
	ASSERT_CU(cuDevicePrimaryCtxRetain(&c, dev), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSetCurrent(c), CUDA_SUCCESS);
}

static int child(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx(); /* primary retained once */

	/* Reset (which keeps the reference: cuda.h). */
	alloc600(CUDA_SUCCESS);
	alloc600(CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuDevicePrimaryCtxReset_v2(dev), CUDA_SUCCESS);
	set_primary(dev); /* two references now */
	ASSERT_UEQ(ht_free(), cap);
	alloc600(CUDA_SUCCESS);

	/* A release that is not the last keeps it; the last frees it. */
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap - 600 * MiB);
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS);
	set_primary(dev);
	ASSERT_UEQ(ht_free(), cap);

	/* A context of its own, destroyed with its memory. */
	CUcontext mine;
	void *pinned, *kept;
	char me[64];
	snprintf(me, sizeof me, "\"host_pid\": %ld,", (long)getpid());
	ASSERT_CU(cuMemHostAlloc(&kept, 2 * MiB, 0), CUDA_SUCCESS); /* the primary's */
	ASSERT_CU(cuCtxCreate_v2(&mine, 0, dev), CUDA_SUCCESS);
	alloc600(CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocHost_v2(&pinned, 3 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(ht_status_u64(me, "host_pinned_bytes"), 5 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(mine), CUDA_SUCCESS);
	ASSERT_UEQ(ht_status_u64(me, "host_pinned_bytes"), 2 * MiB);
	set_primary(dev);
	ASSERT_UEQ(ht_free(), cap);
	alloc600(CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(kept), CUDA_SUCCESS);
	ASSERT_UEQ(ht_status_u64(me, "host_pinned_bytes"), 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "child") == 0 ? child() : 2;
	if (ht_total() < 2 * GiB)
		SKIP("needs a device of 2 GiB or more");
	char regdir[1024];
	snprintf(regdir, sizeof regdir, "VRAMCTL_REGISTRY_DIR=%s/reg", ht_tmp());
	const char *env[] = {"VRAMCTL_LIMIT=1G", ht_kv("T_CAP", GiB), regdir, NULL};
	ASSERT_EQ(ht_run("child", env), 0);
	return 0;
}
