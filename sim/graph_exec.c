/*
 * graph_exec.c - executable graphs (cuGraphInstantiate*, cuGraphUpload,
 * cuGraphLaunch, cuGraphExecDestroy) and the device's graph memory pool: an
 * upload or launch commits the memory nodes' bytes, growing the pool by
 * whole granules; a launch hands the allocations to the program (freed by
 * free.c); cuDeviceGraphMemTrim and destroying the executable graph give
 * back what is not in use.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>

struct gexec {
	int alive;
	struct sim_graph *graph;
	struct gexec *next;
};

static struct gexec *g_execs;

static struct gexec *exec_lookup(CUgraphExec h)
{
	for (struct gexec *e = g_execs; e; e = e->next)
		if ((CUgraphExec)e == h)
			return e->alive ? e : NULL;
	return NULL;
}

/*
 * Instantiation, with the lock held: validates flags as cuda.h documents them
 * (device launch cannot be combined with auto-free), and allows only one
 * executable graph at a time for a graph with memory nodes. No memory is
 * committed here: that happens at upload or launch. On error *out is left
 * untouched and nothing is created.
 */
static CUresult instantiate_locked(CUgraph hGraph, unsigned long long flags, struct gexec **out)
{
	struct sim_graph *g = sim_graph_lookup(hGraph);
	unsigned long long both = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
	                          CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
	if (!g || (flags & ~0xfull) || (flags & both) == both)
		return CUDA_ERROR_INVALID_VALUE;
	if (g->nodes && g->has_exec)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct gexec *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->alive = 1;
	e->graph = g;
	e->next = g_execs;
	g_execs = e;
	g->has_exec = 1;
	*out = e;
	return CUDA_SUCCESS;
}

CUresult simi_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                          unsigned long long flags)
{
	struct gexec *e;
	SIM_LOCK_INIT();
	if (!phGraphExec)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = instantiate_locked(hGraph, flags, &e);
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	SIM_UNLOCK_RETURN(rc);
}

/*
 * The CUDA 11.0 form (flags 0). On failure the error node, when asked for,
 * is set to NULL (the simulator's errors are never one node's fault), and a
 * non-empty log buffer receives a NUL-terminated reason, truncated to fit;
 * on success it receives an empty string. A log buffer of NULL with a
 * non-zero size is CUDA_ERROR_INVALID_VALUE.
 */
CUresult simi_cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
	struct gexec *e;
	SIM_LOCK_INIT();
	if (!phGraphExec || (!logBuffer && bufferSize))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = instantiate_locked(hGraph, 0, &e);
	const char *why = "";
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	else if (rc == CUDA_ERROR_NOT_SUPPORTED)
		why = "vramsim: a graph with memory nodes has one executable graph at a time";
	else
		why = "vramsim: invalid graph";
	if (rc != CUDA_SUCCESS && phErrorNode)
		*phErrorNode = NULL;
	if (bufferSize)
		snprintf(logBuffer, bufferSize, "%s", why);
	SIM_UNLOCK_RETURN(rc);
}

/* Commits a node's memory from the device's graph memory pool. */
static CUresult node_commit(struct sim_gnode *n)
{
	struct sim_dev *d = &g_sim.dev[n->dev];
	if (d->graph_reserved - d->graph_in_use < n->size) {
		uint64_t grow =
		    sim_round_up(n->size - (d->graph_reserved - d->graph_in_use), SIM_GRANULARITY);
		if (sim_charge(d, grow) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
		d->graph_reserved += grow;
	}
	d->graph_in_use += n->size;
	n->state = 1;
	return CUDA_SUCCESS;
}

static void graph_trim(struct sim_dev *d)
{
	if (d->graph_reserved > d->graph_in_use) {
		sim_uncharge(d, d->graph_reserved - d->graph_in_use);
		d->graph_reserved = d->graph_in_use;
	}
}

/* Upload (launch 0) or launch, with the lock held and the stream checked. */
static CUresult run_locked(struct gexec *e, int launch)
{
	CUresult rc;
	for (struct sim_gnode *n = e->graph->nodes; n; n = n->next)
		if (launch && n->state == 2)
			return CUDA_ERROR_INVALID_VALUE; /* previous allocation unfreed */
	for (struct sim_gnode *n = e->graph->nodes; n; n = n->next) {
		if (n->state == 0 && (rc = node_commit(n)) != CUDA_SUCCESS)
			return rc;
	}
	if (!launch)
		return CUDA_SUCCESS;
	for (struct sim_gnode *n = e->graph->nodes; n; n = n->next) {
		struct sim_alloc *a = calloc(1, sizeof(*a));
		if (!a)
			return CUDA_ERROR_OUT_OF_MEMORY;
		a->ptr = n->dptr;
		a->size = n->size;
		a->kind = SIM_ALLOC_GRAPH;
		a->dev = n->dev;
		a->node = n;
		sim_alloc_insert(a);
		n->state = 2;
	}
	return CUDA_SUCCESS;
}

static CUresult graph_run(CUgraphExec hGraphExec, CUstream hStream, int launch)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct gexec *e = exec_lookup(hGraphExec);
	if (!e)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	SIM_UNLOCK_RETURN(run_locked(e, launch));
}

CUresult simi_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 0);
}

CUresult simi_cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 0);
}

CUresult simi_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 1);
}

CUresult simi_cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_run(hGraphExec, hStream, 1);
}

/* Memory committed but not handed to the program goes back; allocations the
 * program owns stay until it frees them. The graph pool is then trimmed. */
static void exec_destroy_locked(struct gexec *e)
{
	e->alive = 0;
	e->graph->has_exec = 0;
	for (struct sim_gnode *n = e->graph->nodes; n; n = n->next) {
		if (n->state == 1) {
			g_sim.dev[n->dev].graph_in_use -= n->size;
			n->state = 0;
		}
	}
	for (int i = 0; i < g_sim.ndev; i++)
		graph_trim(&g_sim.dev[i]);
}

CUresult simi_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	SIM_LOCK_INIT();
	struct gexec *e = exec_lookup(hGraphExec);
	if (!e)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	exec_destroy_locked(e);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/*
 * CUDA 12.0: flags from the parameter block; with
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the new executable graph is uploaded
 * into hUploadStream (checked first, so a bad stream creates nothing). If
 * the upload does not fit, the executable graph is destroyed again and the
 * upload's error returned. result_out says SUCCESS or ERROR (the simulator's
 * failures are never a node's: hErrNode_out is always NULL).
 */
CUresult simi_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS *p = instantiateParams;
	CUresult rc = CUDA_SUCCESS;
	struct gexec *e = NULL;
	SIM_LOCK_INIT();
	if (!p)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int upload = (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0;
	if (!phGraphExec)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!upload || sim_stream_ctx(p->hUploadStream, &rc))
		rc = instantiate_locked(hGraph, p->flags, &e);
	if (rc == CUDA_SUCCESS && upload && (rc = run_locked(e, 0)) != CUDA_SUCCESS)
		exec_destroy_locked(e);
	else if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	p->hErrNode_out = NULL;
	p->result_out =
	    rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return simi_cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

CUresult simi_cuDeviceGraphMemTrim(CUdevice device)
{
	SIM_LOCK_INIT();
	if (device < 0 || device >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	graph_trim(&g_sim.dev[device]);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

void sim_graph_exec_after_fork(void)
{
	SIM_FREE_LIST(struct gexec, g_execs);
}
