/*
 * driver_facts - what the driver on this machine does where the simulator
 * has to make a choice: prints one line per fact, for docs/real-gpu.md.
 * Run without the library (it reads the driver's own answers):
 *
 *   build/gcc-release/bench/driver_facts
 *
 *   totals     cuDeviceTotalMem against NVML's total and reserved
 *   granule    per cuMemAlloc size: what the card and cuMemGetInfo lose
 *              per block (NVML's process list; 16 blocks of each size)
 *   vmm        cuMemGetAllocationGranularity, host-NUMA VMM support
 *   capture    cuMemFreeAsync of cuMemAlloc memory inside a capture: its
 *              answer, then cuStreamEndCapture's
 *   null       cuMemGetInfo[_v2] with free or total NULL (OptiX passes
 *              free = NULL): the code, and whether the other was written
 *   kept       small blocks in a context of their own: what the card holds
 *              after four 512 KiB blocks, after they are freed (the pages
 *              kept?), and after a 1 MiB block in two 512 KiB holes
 *   agree      NVML's free memory against cuMemGetInfo's (the library takes
 *              NVML's figures when they agree: src/hook/card.c), and how
 *              long NVML takes to show a 64 MiB block
 *   pair       ns per cuMemAlloc_v2 + cuMemFree_v2 of 4 KiB and of 64 MiB
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"
#define VR_NVML_PROTOTYPES
#include "common/nvml_api.h"

#define MiB    (1024ull * 1024)
#define BLOCKS 16

static unsigned long long phys_used(nvmlDevice_t n)
{
	nvmlProcessInfo_t info[64];
	unsigned int k = 64;
	if (nvmlDeviceGetComputeRunningProcesses_v3(n, &k, info) != NVML_SUCCESS)
		return 0;
	for (unsigned i = 0; i < k; i++)
		if (info[i].pid == (unsigned)getpid())
			return info[i].usedGpuMemory;
	return 0;
}

static size_t drv_free(void)
{
	size_t f = 0, t = 0;
	cuMemGetInfo_v2(&f, &t);
	return f;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void granule(nvmlDevice_t n, unsigned long long size)
{
	CUdeviceptr p[BLOCKS];
	unsigned long long u0 = phys_used(n);
	size_t f0 = drv_free();
	int got = 0;
	for (; got < BLOCKS; got++)
		if (cuMemAlloc_v2(&p[got], size) != CUDA_SUCCESS)
			break;
	unsigned long long u1 = phys_used(n);
	size_t f1 = drv_free();
	for (int i = 0; i < got; i++)
		cuMemFree_v2(p[i]);
	if (!got)
		return;
	printf("granule    size %llu: card +%.0f, cuMemGetInfo -%.0f bytes per block (%d blocks)\n",
	       size, (double)(u1 - u0) / got, ((double)f0 - (double)f1) / got, got);
}

/* cuMemGetInfo[_v2] with a NULL pointer (test_null_info's question). */
static void null_pointers(void)
{
	const size_t unset = 0x5a5a5a5a5a5a5a5aull;
	size_t f = unset, t = unset;
	unsigned int f32 = 0x5a5a5a5a, t32 = 0x5a5a5a5a;
	CUresult a = cuMemGetInfo_v2(NULL, &t), b = cuMemGetInfo_v2(&f, NULL);
	CUresult c = cuMemGetInfo_v2(NULL, NULL);
	printf("null       cuMemGetInfo_v2(NULL, &total): %d%s; (&free, NULL): %d%s; (NULL, NULL): "
	       "%d\n",
	       (int)a, t != unset ? " (total written)" : "", (int)b,
	       f != unset ? " (free written)" : "", (int)c);
	a = cuMemGetInfo(NULL, &t32);
	b = cuMemGetInfo(&f32, NULL);
	printf("null       cuMemGetInfo(NULL, &total): %d%s; (&free, NULL): %d%s\n", (int)a,
	       t32 != 0x5a5a5a5a ? " (total written)" : "", (int)b,
	       f32 != 0x5a5a5a5a ? " (free written)" : "");
}

/* The pages of small blocks, in a context of their own (sim/small.c's model). */
static void kept(nvmlDevice_t n, CUdevice dev)
{
	CUcontext c, prev = NULL;
	CUdeviceptr s[4], m;
	cuCtxGetCurrent(&prev);
	if (cuCtxCreate_v2(&c, 0, dev) != CUDA_SUCCESS)
		return;
	usleep(200000);
	unsigned long long u0 = phys_used(n);
	for (int i = 0; i < 4; i++)
		cuMemAlloc_v2(&s[i], 512 * 1024);
	usleep(200000);
	unsigned long long u1 = phys_used(n);
	cuMemFree_v2(s[0]);
	cuMemFree_v2(s[2]);
	usleep(200000);
	unsigned long long u2 = phys_used(n);
	CUresult rm = cuMemAlloc_v2(&m, MiB);
	usleep(200000);
	unsigned long long u3 = phys_used(n);
	cuMemFree_v2(s[1]);
	cuMemFree_v2(s[3]);
	if (rm == CUDA_SUCCESS)
		cuMemFree_v2(m);
	usleep(200000);
	unsigned long long u4 = phys_used(n);
	printf(
	    "kept       four 512 KiB blocks: card +%llu; two freed: +%llu; 1 MiB more: +%llu; all "
	    "freed: +%llu (bytes over the new context)\n",
	    u1 - u0, u2 - u0, u3 - u0, u4 - u0);
	cuCtxDestroy_v2(c);
	cuCtxSetCurrent(prev);
}

/* NVML's free memory against the driver's, and how long NVML takes to show
 * a block. */
static void agree(nvmlDevice_t n)
{
	nvmlMemory_t m;
	size_t f1 = drv_free();
	nvmlDeviceGetMemoryInfo(n, &m);
	size_t f2 = drv_free();
	printf(
	    "agree      NVML v1 free - cuMemGetInfo free: %lld bytes (cuMemGetInfo moved by %lld "
	    "meanwhile)\n",
	    (long long)m.free - (long long)f1, (long long)f2 - (long long)f1);
	CUdeviceptr p;
	unsigned long long u0 = phys_used(n);
	double t0 = now_ns(), seen = -1, same = -1;
	if (cuMemAlloc_v2(&p, 64 * MiB) != CUDA_SUCCESS)
		return;
	while (now_ns() - t0 < 2e9 && (seen < 0 || same < 0)) {
		if (seen < 0 && phys_used(n) >= u0 + 64 * MiB)
			seen = now_ns() - t0;
		nvmlDeviceGetMemoryInfo(n, &m);
		if (same < 0 && m.free == drv_free())
			same = now_ns() - t0;
	}
	printf("agree      a 64 MiB block: in NVML's process list after %.0f us, NVML's free = "
	       "cuMemGetInfo's after %.0f us (-1: not within 2 s)\n",
	       seen < 0 ? -1 : seen / 1e3, same < 0 ? -1 : same / 1e3);
	cuMemFree_v2(p);
}

static void pair_time(unsigned long long size)
{
	CUdeviceptr p;
	int n = size > MiB ? 200 : 2000;
	for (int i = 0; i < 50; i++)
		if (cuMemAlloc_v2(&p, size) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		if (cuMemAlloc_v2(&p, size) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	printf("pair       %llu bytes: %.0f ns per cuMemAlloc_v2 + cuMemFree_v2\n", size,
	       (now_ns() - t0) / n);
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	nvmlDevice_t n;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "driver_facts: no CUDA device\n");
		return 1;
	}
	if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &n) != NVML_SUCCESS) {
		fprintf(stderr, "driver_facts: no NVML\n");
		return 1;
	}
	int ver = 0;
	cuDriverGetVersion(&ver);
	printf("driver     CUDA %d.%d\n", ver / 1000, ver % 1000 / 10);

	size_t tot = 0, f = 0, t = 0;
	cuDeviceTotalMem_v2(&tot, dev);
	cuMemGetInfo_v2(&f, &t);
	nvmlMemory_t m1;
	nvmlMemory_v2_t m2;
	memset(&m2, 0, sizeof m2);
	m2.version = nvmlMemory_v2;
	nvmlDeviceGetMemoryInfo(n, &m1);
	nvmlDeviceGetMemoryInfo_v2(n, &m2);
	printf("totals     cuDeviceTotalMem %zu, cuMemGetInfo total %zu free %zu\n", tot, t, f);
	printf("totals     NVML v1 total %llu free %llu used %llu\n", m1.total, m1.free, m1.used);
	printf("totals     NVML v2 total %llu free %llu used %llu reserved %llu\n", m2.total,
	       m2.free, m2.used, m2.reserved);
	printf("totals     this process on the card (NVML) %llu\n", phys_used(n));

	static const unsigned long long sizes[] = {512,
	                                           4096,
	                                           65536,
	                                           512 * 1024,
	                                           MiB,
	                                           MiB + 1,
	                                           3 * MiB / 2,
	                                           2 * MiB - 1,
	                                           2 * MiB,
	                                           2 * MiB + 1,
	                                           3 * MiB,
	                                           4 * MiB + 4096,
	                                           17 * MiB + 12345,
	                                           64 * MiB + 1};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		granule(n, sizes[i]);

	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	size_t gmin = 0, grec = 0;
	cuMemGetAllocationGranularity(&gmin, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	cuMemGetAllocationGranularity(&grec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	int numa_vmm = -1, numa_id = -1;
	CUresult rv = cuDeviceGetAttribute(
	    &numa_vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
	CUresult ri = cuDeviceGetAttribute(&numa_id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev);
	printf("vmm        device granularity minimum %zu recommended %zu\n", gmin, grec);
	printf(
	    "vmm        HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED %d (rc %d), HOST_NUMA_ID %d "
	    "(rc %d)\n",
	    numa_vmm, (int)rv, numa_id, (int)ri);
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = numa_id < 0 ? 0 : numa_id;
	CUmemGenericAllocationHandle h;
	CUresult rc = cuMemCreate(&h, 2 * MiB, &prop, 0);
	printf("vmm        cuMemCreate of 2 MiB on HOST_NUMA %d: %d\n", prop.location.id, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuMemRelease(h);
	rc = cuMemCreate(&h, 20 * MiB, &prop, 0);
	printf("vmm        cuMemCreate of 20 MiB on HOST_NUMA: %d\n", (int)rc);
	if (rc == CUDA_SUCCESS)
		cuMemRelease(h);
	int rdma = -1;
	cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
	                     dev);
	prop.allocFlags.gpuDirectRDMACapable = 1;
	rc = cuMemCreate(&h, 2 * MiB, &prop, 0);
	printf(
	    "vmm        GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED %d; cuMemCreate on HOST_NUMA with "
	    "gpuDirectRDMACapable: %d\n",
	    rdma, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuMemRelease(h);
	prop.allocFlags.gpuDirectRDMACapable = 0;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	rc = cuMemCreate(&h, 2 * MiB, &prop, 0);
	printf("vmm        cuMemCreate on HOST_NUMA with a POSIX fd handle type: %d\n", (int)rc);
	if (rc == CUDA_SUCCESS)
		cuMemRelease(h);
	prop.requestedHandleTypes = 0;
	unsigned int f32 = 0, t32 = 0, tot32 = 0;
	CUresult r32 = cuMemGetInfo(&f32, &t32);
	CUresult rt32 = cuDeviceTotalMem(&tot32, dev);
	printf("legacy     cuMemGetInfo (32-bit): %d; cuDeviceTotalMem (32-bit): %d\n", (int)r32,
	       (int)rt32);

	CUstream st;
	CUdeviceptr p;
	CUgraph g = NULL;
	cuStreamCreate(&st, 0);
	cuMemAlloc_v2(&p, MiB);
	cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
	CUresult rf = cuMemFreeAsync(p, st);
	CUresult re = cuStreamEndCapture(st, &g);
	printf("capture    cuMemFreeAsync(cuMemAlloc memory) in a GLOBAL capture: %d; "
	       "cuStreamEndCapture: %d\n",
	       (int)rf, (int)re);
	if (re == CUDA_SUCCESS && g)
		cuGraphDestroy(g);
	cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
	rf = cuMemFree_v2(p);
	re = cuStreamEndCapture(st, &g);
	printf("capture    cuMemFree in a GLOBAL capture: %d; cuStreamEndCapture: %d\n", (int)rf,
	       (int)re);
	if (re == CUDA_SUCCESS && g)
		cuGraphDestroy(g);
	void *hp = NULL;
	cuMemAllocHost_v2(&hp, 4096);
	cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
	rf = cuMemFreeHost(hp);
	re = cuStreamEndCapture(st, &g);
	printf("capture    cuMemFreeHost in a GLOBAL capture: %d; cuStreamEndCapture: %d\n",
	       (int)rf, (int)re);
	if (re == CUDA_SUCCESS && g)
		cuGraphDestroy(g);
	if (rf != CUDA_SUCCESS)
		cuMemFreeHost(hp);
	CUdeviceptr q = 0;
	cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
	rf = cuMemAlloc_v2(&q, MiB);
	re = cuStreamEndCapture(st, &g);
	printf("capture    cuMemAlloc in a GLOBAL capture: %d; cuStreamEndCapture: %d\n", (int)rf,
	       (int)re);
	if (re == CUDA_SUCCESS && g)
		cuGraphDestroy(g);
	if (rf == CUDA_SUCCESS)
		cuMemFree_v2(q);
	cuMemFree_v2(p);

	null_pointers();
	kept(n, dev);
	agree(n);
	pair_time(4096);
	pair_time(64 * MiB);
	return 0;
}
