/*
 * cudatest.h - driver-API building blocks shared by the simulator's tests
 * (tests/sim) and the library's tests (tests/hook). Included by simtest.h
 * and hooktest.h, after cuda_api.h with VR_CUDA_PROTOTYPES.
 */
#ifndef VRAMCTL_CUDATEST_H
#define VRAMCTL_CUDATEST_H

#include <string.h>

#include "common/cuda_api.h"
#include "test.h"

/* Properties for cuMemCreate: pinned memory at a location (a device
 * ordinal, or a host NUMA node). */
static inline CUmemAllocationProp ct_mem_prop(CUmemLocationType type, int id)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = type;
	p.location.id = id;
	return p;
}

/* A graph memory node's parameters: `bytes` of device memory on dev. */
static inline CUDA_MEM_ALLOC_NODE_PARAMS ct_mem_node(CUdevice dev, unsigned long long bytes)
{
	CUDA_MEM_ALLOC_NODE_PARAMS np;
	memset(&np, 0, sizeof np);
	np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	np.poolProps.location.id = dev;
	np.bytesize = bytes;
	return np;
}

/* A new graph with one memory node of `bytes` on dev; *dptr (when not NULL)
 * gets the node's address. */
static inline CUgraph ct_graph_with(CUdevice dev, unsigned long long bytes, CUdeviceptr *dptr)
{
	CUgraph g;
	CUgraphNode n;
	CUDA_MEM_ALLOC_NODE_PARAMS np = ct_mem_node(dev, bytes);
	ASSERT_CU(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	ASSERT_CU(cuGraphAddMemAllocNode(&n, g, NULL, 0, &np), CUDA_SUCCESS);
	if (dptr)
		*dptr = np.dptr;
	return g;
}

/* cuGraphInstantiateWithParams' parameter block, its outputs poisoned so a
 * test sees that the call wrote them. */
static inline CUDA_GRAPH_INSTANTIATE_PARAMS ct_instantiate_params(cuuint64_t flags, CUstream s)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS p;
	memset(&p, 0, sizeof p);
	p.flags = flags;
	p.hUploadStream = s;
	p.hErrNode_out = (CUgraphNode)0x1;
	p.result_out = (CUgraphInstantiateResult)-1;
	return p;
}

#endif /* VRAMCTL_CUDATEST_H */
