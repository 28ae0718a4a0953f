/*
 * current.c - each thread's stack of current contexts (cuCtxSetCurrent,
 * Push/PopCurrent, GetCurrent, GetDevice) and whether a context handle is
 * valid. Creating, destroying and costing contexts is context.c's.
 */
#include "driver.h"

#include "common/compiler.h"

static _Thread_local struct {
	struct sim_ctx *stack[64];
	int depth;
} t_ctx;

int sim_ctx_valid(struct sim_ctx *c)
{
	if (!c)
		return 0;
	for (int i = 0; i < g_sim.ndev; i++)
		if (c == &g_sim.dev[i].primary)
			return c->alive;
	for (struct sim_ctx *p = g_sim.ctxs; p; p = p->next)
		if (p == c)
			return p->alive;
	return 0;
}

struct sim_ctx *sim_cur_ctx(CUresult *rc)
{
	struct sim_ctx *c = t_ctx.depth ? t_ctx.stack[t_ctx.depth - 1] : NULL;
	if (!sim_ctx_valid(c)) {
		*rc = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	return c;
}

int sim_ctx_stack_full(void)
{
	return t_ctx.depth >= (int)VR_ARRAY_LEN(t_ctx.stack);
}

void sim_ctx_push(struct sim_ctx *c)
{
	t_ctx.stack[t_ctx.depth++] = c;
}

/* No longer current to this thread; other threads find it invalid. */
void sim_ctx_pop_destroyed(struct sim_ctx *c)
{
	if (t_ctx.depth && t_ctx.stack[t_ctx.depth - 1] == c)
		t_ctx.depth--;
}

void sim_ctx_stack_after_fork(void)
{
	t_ctx.depth = 0;
}

CUresult simi_cuCtxSetCurrent(CUcontext ctx)
{
	SIM_LOCK_INIT();
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	if (!c) {
		if (t_ctx.depth)
			t_ctx.depth--;
		SIM_UNLOCK_RETURN(CUDA_SUCCESS);
	}
	if (!sim_ctx_valid(c))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	if (t_ctx.depth)
		t_ctx.stack[t_ctx.depth - 1] = c;
	else
		t_ctx.stack[t_ctx.depth++] = c;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxGetCurrent(CUcontext *pctx)
{
	SIM_LOCK_INIT();
	if (!pctx)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pctx = t_ctx.depth ? (CUcontext)t_ctx.stack[t_ctx.depth - 1] : NULL;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxGetDevice(CUdevice *device)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (c)
		*device = c->dev;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	if (!ctx)
		return simi_cuCtxGetDevice(device);
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	*device = ((struct sim_ctx *)ctx)->dev;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPushCurrent_v2(CUcontext ctx)
{
	SIM_LOCK_INIT();
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(ctx ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_VALUE);
	if (sim_ctx_stack_full())
		SIM_UNLOCK_RETURN(CUDA_ERROR_UNKNOWN);
	sim_ctx_push((struct sim_ctx *)ctx);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPushCurrent(CUcontext ctx)
{
	return simi_cuCtxPushCurrent_v2(ctx);
}

CUresult simi_cuCtxPopCurrent_v2(CUcontext *pctx)
{
	SIM_LOCK_INIT();
	if (t_ctx.depth == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	t_ctx.depth--;
	if (pctx)
		*pctx = (CUcontext)t_ctx.stack[t_ctx.depth];
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuCtxPopCurrent(CUcontext *pctx)
{
	return simi_cuCtxPopCurrent_v2(pctx);
}
