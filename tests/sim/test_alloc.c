/*
 * test_alloc.c - linear allocations (plain, pitch, managed, 32-bit forms),
 * what the card takes for them (over 1 MiB whole 2 MiB pages; 1 MiB or
 * less carved from pages the context keeps after frees: sim/small.c),
 * pinned host memory and the errors the driver gives: no cuInit, no context,
 * zero size, bad and double frees, out of memory.
 */
#include "simtest.h"

#include <string.h>

int main(void)
{
	CUdeviceptr p, q, big;
	size_t free_bytes, total, pitch;
	unsigned int p32, pitch32, f32, t32;
	CUcontext ctx, popped;
	unsigned long long base;

	REQUIRE_SIM();
	/* Before cuInit. */
	ASSERT_CU(cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
	ASSERT_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	/* No context. */
	ASSERT_CU(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
	ASSERT(ctx == NULL);
	ASSERT_CU(cuMemAlloc_v2(&p, 1 << 20), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);

	ASSERT_CU(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
	ASSERT_UEQ(total, 16 * GiB);
	ASSERT_CU(cuDeviceTotalMem(&t32, 0), CUDA_SUCCESS);
	ASSERT_UEQ(t32, 0xffffffffu); /* clamped */

	ctx = sim_setup();
	/* The context itself takes memory (VRAMSIM_CONTEXT_BYTES, 64 MiB). */
	base = sim_used();
	ASSERT_UEQ(base, 64 * MiB);

	/* Linear. */
	ASSERT_CU(cuMemAlloc_v2(&p, 100 * MiB), CUDA_SUCCESS);
	ASSERT(p != 0);
	ASSERT_UEQ(p % 512, 0);
	ASSERT_UEQ(sim_used(), base + 100 * MiB);
	ASSERT_CU(cuMemAlloc_v2(&q, 1000), CUDA_SUCCESS);
	ASSERT(q >= p + 100 * MiB || q + 1000 <= p);
	/* The first small block takes a page of the context's. */
	ASSERT_UEQ(sim_used(), base + 100 * MiB + 2 * MiB);
	CUdeviceptr b;
	size_t s;
	ASSERT_CU(cuMemGetAddressRange_v2(&b, &s, p + 12345), CUDA_SUCCESS);
	ASSERT_UEQ(b, p);
	ASSERT_UEQ(s, 100 * MiB);
	ASSERT_CU(cuMemFree_v2(q), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	/* The page stays the context's after its block is freed. */
	ASSERT_UEQ(sim_used(), base + 2 * MiB);
	base += 2 * MiB;

	/* Errors. */
	ASSERT_CU(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAlloc_v2(NULL, 10), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);                /* double free */
	ASSERT_CU(cuMemFree_v2(0xdeadbeef000ull), CUDA_ERROR_INVALID_VALUE); /* unknown */
	ASSERT_CU(cuMemAlloc_v2(&p, 1 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(p + 512), CUDA_ERROR_INVALID_VALUE); /* not the base */
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 10, 10, 3), CUDA_ERROR_INVALID_VALUE);

	/* Out of memory: nothing is charged, and the card is still usable. */
	ASSERT_CU(cuMemAlloc_v2(&big, 16 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuMemAlloc_v2(&big, 16 * GiB - base), CUDA_SUCCESS);
	ASSERT_CU(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
	ASSERT_UEQ(free_bytes, 0);
	ASSERT_CU(cuMemAlloc_v2(&p, 1 + MiB), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAlloc_v2(&p, 1), CUDA_SUCCESS); /* in the page kept */
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(big), CUDA_SUCCESS);

	/* Pitch: width rounded up to 512, times height. */
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4), CUDA_SUCCESS);
	ASSERT_UEQ(pitch, 1024);
	ASSERT_UEQ(sim_used(), base); /* 100 KiB: in the page kept */
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 1000, 2048, 4), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 2 * MiB); /* 2 MiB: a page of its own */
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);

	/* Managed memory is charged to the device. */
	ASSERT_CU(cuMemAllocManaged(&p, 10 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 10 * MiB);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);

	/* The 32-bit forms. */
	ASSERT_CU(cuMemAlloc(&p32, 4 * MiB), CUDA_SUCCESS);
	ASSERT(p32 != 0);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuMemGetInfo(&f32, &t32), CUDA_SUCCESS);
	ASSERT_UEQ(t32, 0xffffffffu);
	ASSERT_CU(cuMemFree(p32), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree(p32), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAllocPitch(&p32, &pitch32, 100, 10, 8), CUDA_SUCCESS);
	ASSERT_UEQ(pitch32, 512);
	ASSERT_CU(cuMemFree_v2(p32), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* Fragmentation, in a context of its own: four blocks of 512 KiB share
	 * one page; two freed apart leave two holes of 512 KiB, where a block
	 * of 1 MiB does not fit: a new page, and the card holds two pages for
	 * 2 MiB of live blocks. The pages go with their context. */
	{
		CUcontext fc;
		CUdeviceptr s4[4], m1;
		ASSERT_CU(cuCtxCreate_v2(&fc, 0, 0), CUDA_SUCCESS);
		unsigned long long b0 = sim_used();
		for (int i = 0; i < 4; i++)
			ASSERT_CU(cuMemAlloc_v2(&s4[i], 512 * 1024), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), b0 + 2 * MiB);
		ASSERT_CU(cuMemFree_v2(s4[0]), CUDA_SUCCESS);
		ASSERT_CU(cuMemFree_v2(s4[2]), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), b0 + 2 * MiB);
		ASSERT_CU(cuMemAlloc_v2(&m1, MiB), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), b0 + 4 * MiB);
		ASSERT_CU(cuMemAlloc_v2(&s4[0], 512 * 1024), CUDA_SUCCESS); /* a hole */
		ASSERT_UEQ(sim_used(), b0 + 4 * MiB);
		ASSERT_CU(cuCtxDestroy_v2(fc), CUDA_SUCCESS);
		ASSERT_UEQ(sim_used(), b0 - 64 * MiB); /* its own cost went too */
		ASSERT_CU(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	}

	/* Pinned host memory is real and usable, and not device memory. */
	void *h, *h2;
	ASSERT_CU(cuMemHostAlloc(&h, 1 * MiB, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
	memset(h, 0x5a, 1 * MiB);
	ASSERT_UEQ(sim_used(), base);
	CUdeviceptr hd;
	ASSERT_CU(cuMemHostGetDevicePointer_v2(&hd, (char *)h + 10, 0), CUDA_SUCCESS);
	ASSERT_UEQ(hd, (CUdeviceptr)(uintptr_t)h + 10);
	ASSERT_CU(cuMemAllocHost_v2(&h2, 4096), CUDA_SUCCESS);
	((char *)h2)[4095] = 1;
	ASSERT_CU(cuMemFree_v2((CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeHost(h), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeHost(h2), CUDA_SUCCESS);

	/* Registration. */
	static char buf[1 << 16];
	ASSERT_CU(cuMemHostRegister_v2(buf, sizeof(buf), 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemHostRegister_v2(buf + 4096, 4096, 0),
	          CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	ASSERT_CU(cuMemHostGetDevicePointer_v2(&hd, buf, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemHostUnregister(buf), CUDA_SUCCESS);
	ASSERT_CU(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	ASSERT_CU(cuMemHostGetDevicePointer_v2(&hd, buf, 0), CUDA_ERROR_INVALID_VALUE);

	/* Contexts: cuCtxCreate charges its own context memory; destroying it
	 * frees what it allocated. */
	CUcontext c2;
	CUdevice dev;
	ASSERT_CU(cuCtxCreate_v4(&c2, NULL, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 64 * MiB);
	ASSERT_CU(cuCtxGetCurrent(&popped), CUDA_SUCCESS);
	ASSERT(popped == c2);
	ASSERT_CU(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 72 * MiB);
	ASSERT_CU(cuCtxDestroy_v2(c2), CUDA_SUCCESS);
	ASSERT_CU(cuCtxDestroy_v2(c2), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuCtxDestroy_v2(ctx), CUDA_ERROR_INVALID_CONTEXT); /* primary */
	ASSERT_CU(cuCtxGetCurrent(&popped), CUDA_SUCCESS);
	ASSERT(popped == ctx);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE); /* went with its context */

	/* Push/pop and device of the current context. */
	ASSERT_CU(cuCtxCreate_v2(&c2, 0, 0), CUDA_SUCCESS);
	ASSERT_CU(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
	ASSERT(popped == c2);
	ASSERT_CU(cuCtxGetDevice(&dev), CUDA_SUCCESS);
	ASSERT_EQ(dev, 0);
	ASSERT_CU(cuCtxPushCurrent_v2(c2), CUDA_SUCCESS);
	ASSERT_CU(cuCtxDestroy_v2(c2), CUDA_SUCCESS);

	/* Primary context refcount: released to zero, its memory goes. */
	unsigned int flags;
	int active;
	ASSERT_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
	ASSERT_EQ(active, 1);
	ASSERT_CU(cuDevicePrimaryCtxSetFlags(0, 1), CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE);
	ASSERT_CU(cuDevicePrimaryCtxSetFlags_v2(0, 1), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
	ASSERT_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
	ASSERT_EQ(active, 0);
	ASSERT_EQ(flags, 1);
	ASSERT_CU(cuMemAlloc_v2(&q, 1), CUDA_ERROR_INVALID_CONTEXT); /* current is inactive */
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base - 2 * MiB); /* the small blocks' page went with it */
	ASSERT_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
	ASSERT_EQ(active, 0);
	ASSERT_EQ(flags, 0);
	/* Everything went, the context memory too (asked through NVML: the
	 * current context is gone). */
	nvmlDevice_t nd;
	nvmlMemory_t nm;
	ASSERT_CU(nvmlInit_v2(), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetHandleByIndex_v2(0, &nd), NVML_SUCCESS);
	ASSERT_CU(nvmlDeviceGetMemoryInfo(nd, &nm), NVML_SUCCESS);
	ASSERT_UEQ(nm.used, nm.total - nm.free); /* only what the driver reserves */
	ASSERT_UEQ(nm.free, 16 * GiB);
	ASSERT_CU(nvmlShutdown(), NVML_SUCCESS);
	/* Reset does not release: one release is still owed, then no more. */
	ASSERT_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
	ASSERT_CU(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);

	/* Bad devices. */
	ASSERT_CU(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 7), CUDA_ERROR_INVALID_DEVICE);
	ASSERT_CU(cuCtxCreate_v2(&c2, 0, -1), CUDA_ERROR_INVALID_DEVICE);
	return 0;
}
