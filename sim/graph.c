/*
 * graph.c - graphs and their memory allocation nodes (cuGraphCreate,
 * cuGraphDestroy, cuGraphAddMemAllocNode): a node's address is fixed when
 * it is added; its memory is committed when an executable graph is
 * uploaded or launched (graph_exec.c).
 */
#include "driver.h"

#include <stdlib.h>

static struct sim_graph *g_graphs;

struct sim_graph *sim_graph_lookup(CUgraph h)
{
	for (struct sim_graph *g = g_graphs; g; g = g->next)
		if ((CUgraph)g == h)
			return g->alive ? g : NULL;
	return NULL;
}

CUresult simi_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	SIM_LOCK_INIT();
	if (!phGraph || flags != 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_graph *g = calloc(1, sizeof(*g));
	if (!g)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	g->alive = 1;
	g->next = g_graphs;
	g_graphs = g;
	*phGraph = (CUgraph)g;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuGraphDestroy(CUgraph hGraph)
{
	SIM_LOCK_INIT();
	struct sim_graph *g = sim_graph_lookup(hGraph);
	if (!g)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	g->alive = 0; /* nodes stay while an executable graph uses them */
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The address is fixed now; memory is committed at upload or launch. */
CUresult simi_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies,
                                     CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	SIM_LOCK_INIT();
	struct sim_graph *g = sim_graph_lookup(hGraph);
	if (!g || !phGraphNode || !nodeParams || (numDependencies && !dependencies) ||
	    nodeParams->bytesize == 0 ||
	    nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    nodeParams->poolProps.location.id < 0 ||
	    nodeParams->poolProps.location.id >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (g->has_exec)
		SIM_UNLOCK_RETURN(CUDA_ERROR_NOT_SUPPORTED);
	struct sim_gnode *n = calloc(1, sizeof(*n));
	if (!n)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	n->dev = nodeParams->poolProps.location.id;
	n->size = sim_round_up(nodeParams->bytesize, 512);
	n->dptr = sim_addr_alloc(&g_sim.dev[n->dev], n->size, 512);
	if (!n->dptr) {
		free(n);
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	}
	n->next = g->nodes;
	g->nodes = n;
	nodeParams->dptr = n->dptr;
	*phGraphNode = (CUgraphNode)n;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

void sim_graph_alloc_freed(struct sim_alloc *a)
{
	a->node->state = 0;
	g_sim.dev[a->dev].graph_in_use -= a->size;
}

void sim_graph_after_fork(void)
{
	for (struct sim_graph *g = g_graphs; g; g = g->next)
		SIM_FREE_LIST(struct sim_gnode, g->nodes);
	SIM_FREE_LIST(struct sim_graph, g_graphs);
}
