/*
 * sync.c - the synchronising calls (cuCtxSynchronize[_v2],
 * cuStreamSynchronize): the simulated GPU has no work pending, so what a
 * synchronisation does is give pools back what they hold above their
 * release threshold, and refuse during a capture that forbids it.
 */
#include "driver.h"

CUresult simi_cuCtxSynchronize(void)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if ((rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		SIM_UNLOCK_RETURN(rc);
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (c)
		sim_pool_sync(c->dev);
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuCtxSynchronize_v2(CUcontext ctx)
{
	if (!ctx)
		return simi_cuCtxSynchronize();
	SIM_LOCK_INIT();
	if (!sim_ctx_valid((struct sim_ctx *)ctx))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_CONTEXT);
	sim_pool_sync(((struct sim_ctx *)ctx)->dev);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamSynchronize(CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (sim_stream_capture(hStream) == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		/* Necessarily conflicts with the capture, in every mode. */
		sim_stream_invalidate(hStream);
		SIM_UNLOCK_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	}
	struct sim_ctx *c = sim_stream_ctx(hStream, &rc);
	if (c)
		sim_pool_sync(c->dev);
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuStreamSynchronize_ptsz(CUstream hStream)
{
	return simi_cuStreamSynchronize(hStream);
}
