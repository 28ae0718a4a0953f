/*
 * test_graph.c - graph memory nodes: the address is fixed when the node is
 * added, memory is committed at upload or launch, the program owns a
 * launched allocation until it frees it, freed memory stays in the device's
 * graph pool until cuDeviceGraphMemTrim or the executable graph goes.
 */
#include "simtest.h"

int main(void)
{
	CUgraph g;
	CUgraphNode n;
	CUgraphExec e, e2;
	CUstream s;

	REQUIRE_SIM();
	sim_setup();
	unsigned long long base = sim_used();
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);

	CUDA_MEM_ALLOC_NODE_PARAMS np = ct_mem_node(0, 3 * MiB);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, &np), CUDA_SUCCESS);
	CUdeviceptr dptr = np.dptr;
	ASSERT(dptr != 0);
	ASSERT_UEQ(sim_used(), base); /* nothing yet */

	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	/* Only one instantiation of a graph with memory nodes. */
	ASSERT_CU(cuGraphInstantiateWithFlags(&e2, g, 0), CUDA_ERROR_NOT_SUPPORTED);

	/* Upload commits (in 2 MiB chunks of the graph pool). */
	ASSERT_CU(cuGraphUpload(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuMemFree_v2(dptr), CUDA_ERROR_INVALID_VALUE); /* not launched yet */
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	/* Relaunching before the allocation is freed is an error. */
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_ERROR_INVALID_VALUE);
	/* The program frees it: back to the graph pool, still reserved. */
	ASSERT_CU(cuMemFreeAsync(dptr, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuGraphLaunch_ptsz(e, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB); /* reused */
	ASSERT_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* Destroying the executable graph returns committed memory. */
	ASSERT_CU(cuGraphUpload(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
	ASSERT_UEQ(sim_used(), base);
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_ERROR_INVALID_VALUE);

	/* Too big for the card. */
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_SUCCESS); /* the executable outlives its graph */
	ASSERT_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	CUgraph g2;
	ASSERT_CU(cuGraphCreate(&g2, 0), CUDA_SUCCESS);
	np.bytesize = 20 * GiB;
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g2, NULL, 0, &np), CUDA_SUCCESS);
	ASSERT_CU(cuGraphInstantiateWithFlags(&e, g2, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_UEQ(sim_used(), base);
	np.bytesize = 0;
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g2, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g2), CUDA_SUCCESS);
	return 0;
}
