/*
 * graph.c - wrappers of the graph entry points that create, instantiate or
 * destroy graph memory nodes (wrap.h).
 *
 * Policy: a graph's memory nodes are charged when the graph is instantiated,
 * at the sum of their sizes on each device (an upper bound: the driver may
 * reuse memory between nodes of one graph), and given back when the
 * executable graph is destroyed. An instantiation that does not fit is
 * refused with CUDA_ERROR_OUT_OF_MEMORY, before the driver commits anything.
 * Nodes captured from cuMemAllocAsync come through the pool path instead.
 */
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "hook/wrap.h"

static inline uint64_t graph_key(const void *g, int dev)
{
	return (uint64_t)(uintptr_t)g ^ ((uint64_t)dev << 56);
}

VR_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	VR_PASS(cuGraphAddMemAllocNode,
	        (phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
	/* The device first: a node whose memory could not be charged at
	 * instantiation is never added. */
	struct vr_dev *d = NULL;
	if (nodeParams && nodeParams->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
		CUresult dev_rc = vr_dev_for_handle(nodeParams->poolProps.location.id, &d);
		if (dev_rc != CUDA_SUCCESS)
			return dev_rc;
	}
	CUresult rc;
	VR_OWN(rc = vr_real.cuGraphAddMemAllocNode(phGraphNode, hGraph, dependencies,
	                                           numDependencies, nodeParams));
	if (rc != CUDA_SUCCESS || !d)
		return rc;
	uint64_t k = graph_key(hGraph, d->ordinal);
	if (!vr_map_add(VR_KIND_GRAPH, k, d->ordinal, nodeParams->bytesize))
		vr_map_put(VR_KIND_GRAPH, k, d->ordinal, nodeParams->bytesize, 0);
	return rc;
}

VR_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	VR_PASS(cuGraphDestroy, (hGraph));
	CUresult rc;
	VR_OWN(rc = vr_real.cuGraphDestroy(hGraph));
	if (rc == CUDA_SUCCESS) {
		int n = vr_dev_count(), dev;
		uint64_t b;
		for (int i = 0; i < n; i++)
			vr_map_take(VR_KIND_GRAPH, graph_key(hGraph, i), &dev, &b, NULL);
	}
	return rc;
}

/*
 * Before any instantiation: reserve what each device's memory nodes of
 * hGraph add up to, into need[] (0 where nothing). If a device's share does
 * not fit, what was reserved on the others is released and
 * CUDA_ERROR_OUT_OF_MEMORY returned, before the driver commits anything.
 */
static CUresult graph_reserve(CUgraph hGraph, uint64_t need[VR_MAX_DEVICES])
{
	int n = vr_dev_count();
	memset(need, 0, VR_MAX_DEVICES * sizeof need[0]);
	for (int i = 0; i < n; i++) {
		int dev;
		uint64_t b;
		/* Peek: take and put back (a graph is not instantiated twice at once). */
		if (vr_map_take(VR_KIND_GRAPH, graph_key(hGraph, i), &dev, &b, NULL)) {
			vr_map_put(VR_KIND_GRAPH, graph_key(hGraph, i), dev, b, 0);
			struct vr_dev *d = vr_dev_by_ordinal(i);
			if (d && vr_policy_reserve(d, b) != 0) {
				for (int j = 0; j < i; j++)
					if (need[j])
						vr_policy_release(vr_dev_by_ordinal(j), need[j]);
				vr_gt_answered(); /* the other devices' grants undone */
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			need[i] = d ? b : 0;
		}
	}
	return CUDA_SUCCESS;
}

/* After the driver's answer rc: the reservation becomes the executable
 * graph's record (returned at cuGraphExecDestroy), or is released if the
 * driver failed. Returns rc. */
static CUresult graph_settle(const uint64_t need[VR_MAX_DEVICES], CUresult rc,
                             CUgraphExec *phGraphExec)
{
	int n = vr_dev_count();
	for (int i = 0; i < n; i++) {
		if (!need[i])
			continue;
		struct vr_dev *d = vr_dev_by_ordinal(i);
		if (rc != CUDA_SUCCESS)
			vr_policy_release(d, need[i]);
		else
			record(d, VR_KIND_GRAPHEXEC, graph_key(*phGraphExec, i), need[i]);
	}
	return rc;
}

/* Every form of instantiation: reserve the graph's memory, or refuse
 * (running `refused` first, to fill the form's own error reporting); call
 * the driver; settle. */
#define VR_INSTANTIATE(phGraphExec, hGraph, call, refused)                                         \
	do {                                                                                       \
		uint64_t vr__need[VR_MAX_DEVICES];                                                 \
		if (graph_reserve(hGraph, vr__need) != CUDA_SUCCESS) {                             \
			refused;                                                                   \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		}                                                                                  \
		CUresult vr__rc;                                                                   \
		VR_DRIVER(vr__rc = call);                                                          \
		return graph_settle(vr__need, vr__rc, phGraphExec);                                \
	} while (0)

VR_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               unsigned long long flags)
{
	VR_PASS(cuGraphInstantiateWithFlags, (phGraphExec, hGraph, flags));
	VR_INSTANTIATE(phGraphExec, hGraph,
	               vr_real.cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags), (void)0);
}

/* A refusal reads as the driver's own: result_out ERROR, no error node
 * (cuda.h: "an unexpected error ... described by the return value"). */
static void params_refused(CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	if (p) {
		p->hErrNode_out = NULL;
		p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
	}
}

VR_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	VR_PASS(cuGraphInstantiateWithParams, (phGraphExec, hGraph, instantiateParams));
	VR_INSTANTIATE(phGraphExec, hGraph,
	               vr_real.cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams),
	               params_refused(instantiateParams));
}

VR_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	VR_PASS(cuGraphInstantiateWithParams_ptsz, (phGraphExec, hGraph, instantiateParams));
	VR_INSTANTIATE(
	    phGraphExec, hGraph,
	    vr_real.cuGraphInstantiateWithParams_ptsz(phGraphExec, hGraph, instantiateParams),
	    params_refused(instantiateParams));
}

/* The CUDA 11.0 form: a refusal leaves no error node and says why in the
 * log buffer, as the driver reports its own failures there. */
static void log_refused(CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
	static const char why[] = "vramctl: graph memory does not fit under the cap";
	if (phErrorNode)
		*phErrorNode = NULL;
	if (logBuffer && bufferSize) {
		size_t len = bufferSize - 1 < sizeof why - 1 ? bufferSize - 1 : sizeof why - 1;
		memcpy(logBuffer, why, len);
		logBuffer[len] = '\0';
	}
}

VR_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUgraphNode *phErrorNode, char *logBuffer,
                                         size_t bufferSize)
{
	VR_PASS(cuGraphInstantiate_v2, (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize));
	VR_INSTANTIATE(
	    phGraphExec, hGraph,
	    vr_real.cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
	    log_refused(phErrorNode, logBuffer, bufferSize));
}

VR_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	VR_PASS(cuGraphExecDestroy, (hGraphExec));
	int n = vr_dev_count();
	uint64_t had[VR_MAX_DEVICES] = {0};
	for (int i = 0; i < n; i++) {
		int dev;
		if (!vr_map_take(VR_KIND_GRAPHEXEC, graph_key(hGraphExec, i), &dev, &had[i], NULL))
			had[i] = 0;
	}
	CUresult rc;
	VR_OWN(rc = vr_real.cuGraphExecDestroy(hGraphExec));
	for (int i = 0; i < n; i++) {
		if (!had[i])
			continue;
		if (rc != CUDA_SUCCESS)
			vr_map_put(VR_KIND_GRAPHEXEC, graph_key(hGraphExec, i), i, had[i], 0);
		else
			vr_policy_release(vr_dev_by_ordinal(i), had[i]);
	}
	return rc;
}
