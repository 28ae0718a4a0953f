/*
 * test_hostmem.c - host memory the device can address, as the simulator
 * models it for spill: mapped pinned memory (cuMemHostAlloc DEVICEMAP +
 * cuMemHostGetDevicePointer) and its pointer attributes and address range;
 * cuMemCreate on host locations, gated by the driver's version and
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, never
 * IPC-capable, and mapped into a reserved range; the pinning limit
 * (VRAMSIM_HOST_PINNABLE); stream capture, which implicitly synchronising
 * calls break; host functions.
 */
#include "simtest.h"

static unsigned mem_type(CUdeviceptr p)
{
	unsigned t = 99;
	ASSERT_CU(cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_SUCCESS);
	return t;
}

/* Older drivers (or platforms without host VMM): no host locations. */
static int no_host_vmm(void)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop = ct_mem_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
	int v = -1;
	sim_setup();
	ASSERT_CU(cuDeviceGetAttribute(
	              &v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
	          CUDA_SUCCESS);
	ASSERT_EQ(v, 0);
	ASSERT_CU(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	return 0;
}

static void hostfn(void *p)
{
	(*(int *)p)++;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc == 2 && !strcmp(argv[1], "no-host-vmm"))
		return no_host_vmm();
	if (argc == 1) {
		const char *old[] = {"VRAMSIM_DRIVER_VERSION=12010", NULL};
		const char *off[] = {"VRAMSIM_HOST_VMM=0", NULL};
		ASSERT_EQ(sim_run_self("no-host-vmm", old), 0);
		ASSERT_EQ(sim_run_self("no-host-vmm", off), 0);
	}
	setenv("VRAMSIM_HOST_PINNABLE", "64M", 1); /* read at the first call */
	sim_setup();
	unsigned long long base = sim_used();

	/* Mapped pinned memory: host memory, read in place, not device usage. */
	void *hp;
	CUdeviceptr dp, b;
	size_t s;
	ASSERT_CU(
	    cuMemHostAlloc(&hp, 8 * MiB, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
	    CUDA_SUCCESS);
	memset(hp, 0x5a, 8 * MiB);
	ASSERT_CU(cuMemHostGetDevicePointer_v2(&dp, hp, 0), CUDA_SUCCESS);
	ASSERT_UEQ(dp, (uintptr_t)hp);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_EQ(mem_type(dp + 100), CU_MEMORYTYPE_HOST);
	void *back = NULL;
	ASSERT_CU(cuPointerGetAttribute(&back, CU_POINTER_ATTRIBUTE_HOST_POINTER, dp),
	          CUDA_SUCCESS);
	ASSERT(back == hp);
	int ipc = 1;
	ASSERT_CU(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, dp),
	          CUDA_SUCCESS);
	ASSERT_EQ(ipc, 0);
	ASSERT_CU(cuMemGetAddressRange_v2(&b, &s, dp + 4096), CUDA_SUCCESS);
	ASSERT_UEQ(b, dp);
	ASSERT_UEQ(s, 8 * MiB);
	/* Not device memory: the device frees refuse it. */
	ASSERT_CU(cuMemFree_v2(dp), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemFreeAsync(dp, NULL), CUDA_ERROR_INVALID_VALUE);

	/* Device memory answers the other way. */
	CUdeviceptr d;
	ASSERT_CU(cuMemAlloc_v2(&d, MiB), CUDA_SUCCESS);
	ASSERT_EQ(mem_type(d), CU_MEMORYTYPE_DEVICE);
	ASSERT_CU(cuPointerGetAttribute(&back, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d),
	          CUDA_SUCCESS);
	ASSERT_EQ(ipc, 1);
	/* Several at once; an unknown pointer reads as zeros, not an error. */
	CUpointer_attribute at[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	                             CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
	                             CU_POINTER_ATTRIBUTE_RANGE_SIZE};
	unsigned t = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	void *data[3] = {&t, &start, &size};
	ASSERT_CU(cuPointerGetAttributes(3, at, data, dp + 8), CUDA_SUCCESS);
	ASSERT_EQ(t, CU_MEMORYTYPE_HOST);
	ASSERT_UEQ(start, dp);
	ASSERT_UEQ(size, 8 * MiB);
	ASSERT_CU(cuPointerGetAttributes(3, at, data, 0x10), CUDA_SUCCESS);
	ASSERT_EQ(t, 0);
	ASSERT_UEQ(start, 0);
	ASSERT_CU(cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 0x10),
	          CUDA_ERROR_INVALID_VALUE);

	/* The pinning limit: 64 MiB in all, 8 held. */
	void *hp2;
	ASSERT_CU(cuMemHostAlloc(&hp2, 60 * MiB, CU_MEMHOSTALLOC_DEVICEMAP),
	          CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemHostAlloc(&hp2, 56 * MiB, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(hp2), CUDA_SUCCESS);

	/* Host-location VMM (13.0 driver: supported), mapped into a reserved range. */
	int v = 0;
	ASSERT_CU(cuDeviceGetAttribute(
	              &v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
	          CUDA_SUCCESS);
	ASSERT_EQ(v, 1);
	ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0), CUDA_SUCCESS);
	ASSERT_EQ(v, 0);
	CUmemAllocationProp hprop = ct_mem_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
	CUmemGenericAllocationHandle h;
	hprop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	ASSERT_CU(cuMemCreate(&h, 4 * MiB, &hprop, 0), CUDA_ERROR_INVALID_VALUE);
	hprop.requestedHandleTypes = 0;
	CUmemAllocationProp cur = ct_mem_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
	ASSERT_CU(cuMemCreate(&h, 4 * MiB, &cur, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemCreate(&h, 64 * MiB, &hprop, 0), CUDA_ERROR_OUT_OF_MEMORY); /* pinning */
	ASSERT_CU(cuMemCreate(&h, 4 * MiB, &hprop, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 2 * MiB); /* the 1 MiB block's page */
	CUdeviceptr va;
	ASSERT_CU(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
	ASSERT_EQ(mem_type(va + 3 * MiB), CU_MEMORYTYPE_HOST);
	ASSERT_CU(
	    cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 3 * MiB),
	    CUDA_SUCCESS);
	ASSERT_UEQ(start, va); /* the reservation */
	ASSERT_CU(cuMemGetAddressRange_v2(&b, &s, va + 3 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(b, va + 2 * MiB); /* the mapping */
	ASSERT_UEQ(s, 4 * MiB);
	int fd = -1;
	ASSERT_CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	/* Pinned until unmapped. */
	ASSERT_CU(cuMemHostAlloc(&hp2, 53 * MiB, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemUnmap(va + 2 * MiB, 4 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemHostAlloc(&hp2, 53 * MiB, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(hp2), CUDA_SUCCESS);
	ASSERT_CU(cuMemAddressFree(va, 16 * MiB), CUDA_SUCCESS);

	/* Stream capture: an implicitly synchronising call breaks a GLOBAL
	 * capture; the capture then ends invalidated. RELAXED allows it. */
	CUstream st;
	CUstreamCaptureStatus cs = 9;
	CUgraph g;
	int ran = 0;
	ASSERT_CU(cuStreamCreate(&st, 0), CUDA_SUCCESS);
	ASSERT_CU(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
	          CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuStreamIsCapturing(st, &cs), CUDA_SUCCESS);
	ASSERT_EQ(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	ASSERT_CU(cuLaunchHostFunc(st, hostfn, &ran), CUDA_SUCCESS);
	ASSERT_EQ(ran, 0); /* a node of the graph, not run now */
	/* Not a graph allocation: refused, the capture goes on (driver 580). */
	ASSERT_CU(cuMemFreeAsync(d, st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuStreamIsCapturing(st, &cs), CUDA_SUCCESS);
	ASSERT_EQ(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(hp), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(d), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CUdeviceptr d2;
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&d2, MiB), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	ASSERT_CU(cuCtxSynchronize(), CUDA_SUCCESS);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
	/* A thread in RELAXED mode may make such calls during a GLOBAL capture. */
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	ASSERT_CU(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
	ASSERT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
	void *hp3;
	ASSERT_CU(cuMemHostAlloc(&hp3, MiB, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(hp3), CUDA_SUCCESS);
	ASSERT_CU(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
	ASSERT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
	ASSERT_CU(cuStreamSynchronize(st), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	ASSERT_CU(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	ASSERT_CU(cuStreamEndCapture(st, &g), CUDA_SUCCESS);
	ASSERT(g != NULL);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
	ASSERT_CU(cuStreamIsCapturing(st, &cs), CUDA_SUCCESS);
	ASSERT_EQ(cs, CU_STREAM_CAPTURE_STATUS_NONE);
	/* Outside capture a host function runs (here: at once). */
	ASSERT_CU(cuLaunchHostFunc(st, hostfn, &ran), CUDA_SUCCESS);
	ASSERT_EQ(ran, 1);

	ASSERT_CU(cuMemFreeHost(hp), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(d), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 2 * MiB); /* d's page, kept by the context */
	printf("ok\n");
	return 0;
}
