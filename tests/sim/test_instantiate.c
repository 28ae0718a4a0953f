/*
 * test_instantiate.c - the other two ways to instantiate a graph:
 * cuGraphInstantiateWithParams (CUDA 12.0, and its _ptsz form) and
 * cuGraphInstantiate_v2 (CUDA 11.0). Neither commits memory by itself;
 * WithParams with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads into the given
 * stream (committing the nodes' memory) and reports in result_out; the 11.0
 * form reports in its error node and log buffer. The parameter block has
 * cuda.h's layout.
 */
#include "simtest.h"

#include <stddef.h>
#include <string.h>

_Static_assert(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, flags) == 0, "layout");
_Static_assert(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream) == 8, "layout");
_Static_assert(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out) == 16, "layout");
_Static_assert(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out) == 24, "layout");
_Static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == 32, "layout");

static CUgraph graph_with(unsigned long long bytes, CUdeviceptr *dptr)
{
	return ct_graph_with(0, bytes, dptr);
}

static void with_params(CUstream s, unsigned long long base)
{
	CUdeviceptr dptr;
	CUgraphExec e, e2;
	CUgraph g = graph_with(3 * MiB, &dptr);

	/* No upload: nothing committed, SUCCESS reported. */
	CUDA_GRAPH_INSTANTIATE_PARAMS p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_SUCCESS);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
	ASSERT(p.hErrNode_out == NULL);
	ASSERT_UEQ(sim_used(), base);
	/* A second executable graph of a graph with memory nodes: ERROR. */
	p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e2, g, &p), CUDA_ERROR_NOT_SUPPORTED);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	ASSERT(p.hErrNode_out == NULL);
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* Upload: committed at instantiation, into the stream given. */
	p = ct_instantiate_params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, s);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_SUCCESS);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuGraphLaunch(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuMemFree_v2(dptr), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* The per-thread form, uploading into the per-thread default stream. */
	p = ct_instantiate_params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, CU_STREAM_PER_THREAD);
	ASSERT_CU(cuGraphInstantiateWithParams_ptsz(&e, g, &p), CUDA_SUCCESS);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* Bad arguments create nothing and report ERROR. */
	e = (CUgraphExec)0x1;
	p = ct_instantiate_params(0x10, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	ASSERT(p.hErrNode_out == NULL);
	ASSERT(e == (CUgraphExec)0x1);
	p = ct_instantiate_params(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
	                              CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH,
	                          NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	p = ct_instantiate_params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, (CUstream)0x1234);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	ASSERT(e == (CUgraphExec)0x1);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, NULL), CUDA_ERROR_INVALID_VALUE);
	p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(NULL, g, &p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, (CUgraph)0x1234, &p), CUDA_ERROR_INVALID_VALUE);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	/* None of them left an executable graph behind. */
	p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, g, &p), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);

	/* An upload that does not fit: the executable graph goes again. */
	CUgraph big = graph_with(20 * GiB, NULL);
	p = ct_instantiate_params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, s);
	e = (CUgraphExec)0x1;
	ASSERT_CU(cuGraphInstantiateWithParams(&e, big, &p), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
	ASSERT(e == (CUgraphExec)0x1);
	ASSERT_UEQ(sim_used(), base);
	p = ct_instantiate_params(0, NULL);
	ASSERT_CU(cuGraphInstantiateWithParams(&e, big, &p), CUDA_SUCCESS); /* not taken */
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(cuGraphDestroy(big), CUDA_SUCCESS);
}

static void v2(CUstream s, unsigned long long base)
{
	CUdeviceptr dptr;
	CUgraphExec e, e2;
	CUgraphNode err = (CUgraphNode)0x1;
	char log[128];
	CUgraph g = graph_with(3 * MiB, &dptr);

	memset(log, 'x', sizeof log);
	ASSERT_CU(cuGraphInstantiate_v2(&e, g, &err, log, sizeof log), CUDA_SUCCESS);
	ASSERT_STR_EQ(log, "");
	ASSERT_UEQ(sim_used(), base); /* committed at upload or launch only */
	ASSERT_CU(cuGraphInstantiate_v2(&e2, g, &err, log, sizeof log), CUDA_ERROR_NOT_SUPPORTED);
	ASSERT(err == NULL);
	ASSERT(strlen(log) > 0);
	/* Truncated to fit, NUL-terminated. */
	memset(log, 'x', sizeof log);
	ASSERT_CU(cuGraphInstantiate_v2(&e2, g, NULL, log, 4), CUDA_ERROR_NOT_SUPPORTED);
	ASSERT_EQ(strlen(log), 3);
	ASSERT_CU(cuGraphUpload(e, s), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 4 * MiB);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);

	/* No log buffer is fine; a size without a buffer is not. */
	ASSERT_CU(cuGraphInstantiate_v2(&e, g, NULL, NULL, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphExecDestroy(e), CUDA_SUCCESS);
	ASSERT_CU(cuGraphInstantiate_v2(&e, g, NULL, NULL, 16), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphInstantiate_v2(NULL, g, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphInstantiate_v2(&e, (CUgraph)0x1234, NULL, NULL, 0),
	          CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGraphDestroy(g), CUDA_SUCCESS);
}

int main(void)
{
	CUstream s;

	REQUIRE_SIM();
	sim_setup();
	unsigned long long base = sim_used();
	ASSERT_CU(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	with_params(s, base);
	v2(s, base);
	ASSERT_CU(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	return 0;
}
