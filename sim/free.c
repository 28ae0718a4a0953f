/*
 * free.c - device memory given back: cuMemFree and cuMemFreeAsync for every
 * kind of allocation in the pointer table (alloc.c), each giving back what
 * its kind holds, and the allocations that go with a destroyed context.
 */
#include "driver.h"

#include <stdlib.h>

void sim_alloc_free(struct sim_alloc *a)
{
	sim_alloc_remove(a);
	sim_copy_forget(a);
	switch (a->kind) {
	case SIM_ALLOC_LINEAR:
		if (a->page)
			sim_small_give(a->page, a->first, a->granules);
		else
			sim_uncharge(&g_sim.dev[a->dev], a->charged);
		break;
	case SIM_ALLOC_ASYNC:
		sim_pool_alloc_freed(a);
		break;
	case SIM_ALLOC_GRAPH:
		sim_graph_alloc_freed(a);
		break;
	default: /* SIM_ALLOC_IPC: the exporter's memory, nothing to give back */
		break;
	}
	free(a);
}

/* cuMemFree: linear, stream-ordered (synchronously) and graph allocations. */
static CUresult mem_free(CUdeviceptr dptr)
{
	struct sim_alloc *a;
	if (dptr == 0)
		return CUDA_SUCCESS; /* freeing NULL is a no-op, as cudaFree(NULL) */
	a = sim_alloc_find(dptr);
	if (!a || a->kind == SIM_ALLOC_IPC)
		return CUDA_ERROR_INVALID_VALUE;
	sim_alloc_free(a);
	return CUDA_SUCCESS;
}

CUresult simi_cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_cur_ctx(&rc) || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	SIM_UNLOCK_RETURN(mem_free(dptr));
}

CUresult simi_cuMemFree(unsigned int dptr)
{
	return simi_cuMemFree_v2(dptr);
}

/* Stream-ordered free: pool memory goes back to its pool (still reserved
 * until a synchronisation trims it); other allocations are freed. */
CUresult simi_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	struct sim_alloc *a = sim_alloc_find(dptr);
	/* cuda.h: "During stream capture, this function results in the creation
	 * of a free node and must therefore be passed the address of a graph
	 * allocation." Anything else is refused; driver 580 on an H200 leaves
	 * the capture active (bench/gpu/driver_facts, docs/real-gpu.md). */
	if (sim_stream_capture(hStream) == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
	    (!a || a->kind != SIM_ALLOC_GRAPH))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!a || a->kind == SIM_ALLOC_IPC)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	sim_alloc_free(a);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return simi_cuMemFreeAsync(dptr, hStream);
}

static int ctx_owns(struct sim_alloc *a, void *ctx)
{
	if (a->ctx == ctx && (a->kind == SIM_ALLOC_LINEAR || a->kind == SIM_ALLOC_IPC))
		sim_alloc_free(a);
	return 0;
}

void sim_free_ctx_allocs(struct sim_ctx *c)
{
	sim_alloc_each(ctx_owns, c);
}
