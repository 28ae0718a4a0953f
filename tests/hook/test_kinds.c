/*
 * test_kinds - each allocation family is counted as docs/architecture.md
 * ("What is counted") says, and
 * what is not device memory is not: linear, pitch (pitch x height), managed,
 * stream-ordered (by what the pool physically holds), pools of our own,
 * virtual memory (device handles; never address reservations, never host
 * locations), arrays and mipmapped arrays (their true size), graph memory
 * nodes (at instantiation), pinned host memory (never capped), and imports
 * (IPC, shareable handles: never counted twice). "Counted" is read the way a
 * program reads it: cap - cuMemGetInfo's free.
 */
#include <stdatomic.h>

#include "hooktest.h"

static uint64_t cap;

static uint64_t used(void)
{
	return cap - ht_free();
}

static void linear_pitch_managed(void)
{
	CUdeviceptr p;
	size_t pitch = 0;
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 1000, 100, 4), CUDA_SUCCESS);
	ASSERT_UGE(pitch, 1000);
	ASSERT_UEQ(used(), (uint64_t)pitch * 100);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);

	CUresult rc = cuMemAllocManaged(&p, 8 * MiB, CU_MEM_ATTACH_GLOBAL);
	if (rc != CUDA_ERROR_NOT_SUPPORTED) {
		ASSERT_CU(rc, CUDA_SUCCESS);
		ASSERT_UEQ(used(), 8 * MiB);
		ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 0);
		ASSERT_CU(cuMemAllocManaged(&p, cap + 1, CU_MEM_ATTACH_GLOBAL),
		          CUDA_ERROR_OUT_OF_MEMORY);
	}
}

static void vmm(CUdevice dev)
{
	CUmemAllocationProp prop = ct_mem_prop(CU_MEM_LOCATION_TYPE_DEVICE, dev);
	size_t g = 0;
	ASSERT_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	          CUDA_SUCCESS);
	CUmemGenericAllocationHandle h;
	ASSERT_CU(cuMemCreate(&h, 4 * g, &prop, 0), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 4 * g);
	/* Address space is not memory: a reservation past the cap is fine. */
	CUdeviceptr va;
	size_t span = (2 * cap + g - 1) / g * g;
	ASSERT_CU(cuMemAddressReserve(&va, span, 0, 0, 0), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 4 * g);
	ASSERT_CU(cuMemMap(va, 4 * g, 0, h, 0), CUDA_SUCCESS);
	CUmemAccessDesc acc = {.location = prop.location,
	                       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	ASSERT_CU(cuMemSetAccess(va, 4 * g, &acc, 1), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 4 * g);
	ASSERT_CU(cuMemUnmap(va, 4 * g), CUDA_SUCCESS);
	ASSERT_CU(cuMemAddressFree(va, span), CUDA_SUCCESS);
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	/* Past the cap: refused before the driver. */
	size_t big = (cap / g + 1) * g;
	ASSERT_CU(cuMemCreate(&h, big, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

	/* Host locations are host memory. */
	CUmemAllocationProp hp = prop;
	hp.location.type = CU_MEM_LOCATION_TYPE_HOST;
	hp.location.id = 0;
	size_t hg = 0;
	if (cuMemGetAllocationGranularity(&hg, &hp, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
	        CUDA_SUCCESS &&
	    cuMemCreate(&h, 2 * hg, &hp, 0) == CUDA_SUCCESS) {
		ASSERT_UEQ(used(), 0);
		ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	}

	/* A handle imported from a shareable handle is the same memory. */
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	ASSERT_CU(cuMemCreate(&h, 2 * g, &prop, 0), CUDA_SUCCESS);
	int fd = -1;
	if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
	    CUDA_SUCCESS) {
		CUmemGenericAllocationHandle h2;
		ASSERT_CU(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)fd,
		                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
		          CUDA_SUCCESS);
		ASSERT_UEQ(used(), 2 * g);
		ASSERT_CU(cuMemRelease(h2), CUDA_SUCCESS);
		ASSERT_UEQ(used(), 2 * g);
		close(fd);
	}
	ASSERT_CU(cuMemRelease(h), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
}

static uint64_t pool_reserved(CUmemoryPool pool)
{
	cuuint64_t v = 0;
	ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v),
	          CUDA_SUCCESS);
	return v;
}

static void stream_ordered(CUdevice dev)
{
	CUstream s;
	CUmemoryPool pool;
	CUdeviceptr p, q;
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGetDefaultMemPool(&pool, dev), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 10 * MiB, s), CUDA_SUCCESS);
	ASSERT_UGE(pool_reserved(pool), 10 * MiB);
	ASSERT_UEQ(used(), pool_reserved(pool)); /* what the pool holds */
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_UEQ(used(), pool_reserved(pool)); /* threshold 0: given back */

	/* A pool that keeps everything (PyTorch's async backend). */
	cuuint64_t keep = UINT64_MAX;
	ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
	          CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 20 * MiB, s), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_UGE(pool_reserved(pool), 20 * MiB);
	ASSERT_UEQ(used(), pool_reserved(pool)); /* freed, still held */
	/* Reuse of what the pool holds costs nothing more. */
	ASSERT_CU(cuMemAllocAsync(&q, 20 * MiB, s), CUDA_SUCCESS);
	ASSERT_UEQ(used(), pool_reserved(pool));
	ASSERT_CU(cuMemFreeAsync(q, s), CUDA_SUCCESS);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_CU(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
	ASSERT_UEQ(pool_reserved(pool), 0);
	ASSERT_UEQ(used(), 0);
	/* Past the cap: refused. The per-thread-stream variant too. */
	ASSERT_CU(cuMemAllocAsync(&p, cap + 1, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAllocAsync_ptsz(&p, cap + 1, s), CUDA_ERROR_OUT_OF_MEMORY);

	/* A pool of our own. */
	CUmemPoolProps pp;
	memset(&pp, 0, sizeof pp);
	pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	pp.location.id = dev;
	CUmemoryPool mine;
	ASSERT_CU(cuMemPoolCreate(&mine, &pp), CUDA_SUCCESS);
	ASSERT_CU(cuMemPoolSetAttribute(mine, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
	          CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocFromPoolAsync(&p, 6 * MiB, mine, s), CUDA_SUCCESS);
	ASSERT_UEQ(used(), pool_reserved(mine));
	ASSERT_CU(cuMemAllocFromPoolAsync(&q, cap, mine, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_UGE(used(), 6 * MiB);
	ASSERT_CU(cuMemPoolDestroy(mine), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

static void arrays(CUdevice dev)
{
	CUarray a;
	CUDA_ARRAY_DESCRIPTOR d2 = {
	    .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	ASSERT_CU(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
	CUDA_ARRAY_MEMORY_REQUIREMENTS r;
	if (cuArrayGetMemoryRequirements(&r, a, dev) == CUDA_SUCCESS)
		ASSERT_UEQ(used(), r.size);
	else
		ASSERT_UGE(used(), 4 * MiB);
	ASSERT_CU(cuArrayDestroy(a), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);

	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 256,
	                              .Height = 256,
	                              .Depth = 16,
	                              .Format = CU_AD_FORMAT_UNSIGNED_INT8,
	                              .NumChannels = 4};
	ASSERT_CU(cuArray3DCreate_v2(&a, &d3), CUDA_SUCCESS);
	if (cuArrayGetMemoryRequirements(&r, a, dev) == CUDA_SUCCESS)
		ASSERT_UEQ(used(), r.size);
	ASSERT_UGE(used(), 4 * MiB);
	ASSERT_CU(cuArrayDestroy(a), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);

	CUmipmappedArray m;
	CUDA_ARRAY3D_DESCRIPTOR dm = {
	    .Width = 512, .Height = 512, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
	ASSERT_CU(cuMipmappedArrayCreate(&m, &dm, 4), CUDA_SUCCESS);
	if (cuMipmappedArrayGetMemoryRequirements(&r, m, dev) == CUDA_SUCCESS)
		ASSERT_UEQ(used(), r.size);
	ASSERT_UGE(used(), 4 * MiB);
	ASSERT_CU(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);

	/* Past the cap: refused. */
	CUDA_ARRAY3D_DESCRIPTOR huge = {.Width = 16384,
	                                .Height = 16384,
	                                .Depth = 2048,
	                                .Format = CU_AD_FORMAT_FLOAT,
	                                .NumChannels = 4};
	ASSERT_CU(cuArray3DCreate_v2(&a, &huge), CUDA_ERROR_OUT_OF_MEMORY);
}

static void graphs(CUdevice dev)
{
	CUgraph g;
	CUgraphNode n;
	CUgraphExec e;
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	CUDA_MEM_ALLOC_NODE_PARAMS np = ct_mem_node(dev, 32 * MiB);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, &np), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0); /* nothing committed yet */
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 32 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	/* A graph whose memory does not fit is not instantiated. */
	np.bytesize = cap;
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, &np), CUDA_SUCCESS);
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
}

static void pinned(void)
{
	/* Fill the cap with device memory: pinned host memory still works. */
	CUdeviceptr full;
	ASSERT_CU(cuMemAlloc_v2(&full, cap), CUDA_SUCCESS);
	void *a, *b;
	ASSERT_CU(cuMemHostAlloc(&a, 16 * MiB, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocHost_v2(&b, 16 * MiB), CUDA_SUCCESS);
	void *c = aligned_alloc(4096, 16 * MiB);
	ASSERT(c);
	ASSERT_CU(cuMemHostRegister_v2(c, 16 * MiB, 0), CUDA_SUCCESS);
	ASSERT_UEQ(used(), cap);
	ASSERT_CU(cuMemHostUnregister(c), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(a), CUDA_SUCCESS);
	ASSERT_CU(cuMemFreeHost(b), CUDA_SUCCESS);
	free(c);
	ASSERT_CU(cuMemFree_v2(full), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
}

/* IPC: the exporter's memory is counted once, by the exporter. */
static void ipc_export(void)
{
	CUdeviceptr p;
	CUipcMemHandle h;
	ASSERT_CU(cuMemAlloc_v2(&p, 64 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuIpcGetMemHandle(&h, p), CUDA_SUCCESS);
	char path[1024];
	snprintf(path, sizeof path, "%s/ipc.handle", ht_tmp());
	FILE *f = fopen(path, "wb");
	ASSERT(f && fwrite(&h, sizeof h, 1, f) == 1);
	fclose(f);
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "hooktest-child", "importer", (char *)NULL);
		_exit(127);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
}

static int importer(void)
{
	cap = ht_env_u64("T_CAP");
	ht_ctx();
	CUipcMemHandle h;
	char path[1024];
	snprintf(path, sizeof path, "%s/ipc.handle", ht_tmp());
	FILE *f = fopen(path, "rb");
	ASSERT(f && fread(&h, sizeof h, 1, f) == 1);
	fclose(f);
	ASSERT_UEQ(used(), 64 * MiB); /* the exporter's, group-wide */
	CUdeviceptr p;
	ASSERT_CU(cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 64 * MiB); /* not counted twice */
	ASSERT_CU(cuIpcCloseMemHandle(p), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 64 * MiB);
	return 0;
}

static int child(void)
{
	cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	ASSERT_UEQ(used(), 0);
	linear_pitch_managed();
	vmm(dev);
	stream_ordered(dev);
	arrays(dev);
	graphs(dev);
	pinned();
	ipc_export();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "child"))
			return child();
		if (!strcmp(argv[1], "importer"))
			return importer();
		return 2;
	}
	uint64_t c = ht_total() / 4 / MiB * MiB;
	char group[64];
	snprintf(group, sizeof group, "VRAMCTL_GROUP=kinds-%d", (int)getpid());
	const char *env[] = {ht_kv("VRAMCTL_LIMIT", c), group, ht_kv("T_CAP", c), NULL};
	ASSERT_EQ(ht_run("child", env), 0);
	return 0;
}
