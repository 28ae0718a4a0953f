/*
 * test_faults - a failing driver changes no books and never crashes: the
 * simulator fails chosen calls (VRAMSIM_FAULT=name:N:code), and after each
 * the program sees the same free memory as before and the driver's own
 * error code. A free the driver refuses keeps its allocation counted.
 */
#include "hooktest.h"

static uint64_t cap;

static uint64_t used(void)
{
	return cap - ht_free();
}

static int child(void)
{
	cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	CUdeviceptr p, q;
	size_t pitch;

	/* The first call of each fails with the code in VRAMSIM_FAULT. */
	ASSERT_CU(cuMemAlloc_v2(&p, 8 * MiB), CUDA_ERROR_UNKNOWN);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuMemAllocManaged(&p, 8 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(used(), 0);

	CUmemAllocationProp prop = ct_mem_prop(CU_MEM_LOCATION_TYPE_DEVICE, dev);
	CUmemGenericAllocationHandle h;
	ASSERT_CU(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(used(), 0);

	CUarray a;
	CUDA_ARRAY_DESCRIPTOR d2 = {
	    .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	ASSERT_CU(cuArrayCreate_v2(&a, &d2), CUDA_ERROR_UNKNOWN);
	ASSERT_UEQ(used(), 0);

	CUstream s;
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	ASSERT_CU(cuMemAllocAsync(&p, 8 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuStreamSynchronize(s), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);

	CUgraph g;
	CUgraphNode n;
	CUgraphExec e;
	CUDA_MEM_ALLOC_NODE_PARAMS np = ct_mem_node(dev, 4 * MiB);
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, &np), CUDA_SUCCESS);
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);

	void *hp;
	ASSERT_CU(cuMemHostAlloc(&hp, MiB, 0), CUDA_ERROR_OUT_OF_MEMORY);

	/* The second calls succeed and count. */
	ASSERT_CU(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&q, 8 * MiB), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 16 * MiB);
	/* The first free fails: the allocation stays counted, and is freed later. */
	ASSERT_CU(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(used(), 16 * MiB);
	ASSERT_CU(cuMemFree_v2(p), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(q), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	ASSERT_CU(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
	ASSERT_UGE(used(), 16384);
	ASSERT_CU(cuArrayDestroy(a), CUDA_SUCCESS);
	ASSERT_UEQ(used(), 0);
	/* A failing memory query is the driver's answer, unchanged. */
	size_t f, t;
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	return 0;
}

int main(int argc, char **argv)
{
	REQUIRE_SIM();
	if (argc > 1)
		return strcmp(argv[1], "child") == 0 ? child() : 2;
	uint64_t c = ht_total() / 4;
	const char *env[] = {
	    ht_kv("VRAMCTL_LIMIT", c), ht_kv("T_CAP", c),
	    "VRAMSIM_FAULT=cuMemAlloc_v2:1:999,cuMemAllocPitch_v2:1:2,cuMemAllocManaged:1:1,"
	    "cuMemCreate:1:2,cuArrayCreate_v2:1:999,cuMemAllocAsync:1:2,"
	    "cuGraphInstantiateWithFlags:1:2,cuMemHostAlloc:1:2,cuMemFree_v2:1:1",
	    NULL};
	ASSERT_EQ(ht_run("child", env), 0);
	return 0;
}
