/*
 * stream.c - streams (cuStreamCreate/Destroy), the context a stream handle
 * belongs to, and the work queued on them (kernels, host functions), which
 * the simulated GPU finishes at once; a kernel's code is module.c's. Capture is capture.c's,
 * synchronising sync.c's.
 */
#include "driver.h"

#include <stdlib.h>

struct sim_ctx *sim_stream_ctx(CUstream s, CUresult *rc)
{
	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return sim_cur_ctx(rc);
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if ((CUstream)p != s)
			continue;
		if (!p->alive || !sim_ctx_valid(p->ctx))
			break;
		return p->ctx;
	}
	*rc = CUDA_ERROR_INVALID_HANDLE;
	return NULL;
}

CUresult simi_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!phStream || Flags > 1)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	struct sim_stream *s = calloc(1, sizeof(*s));
	if (!s)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	s->magic = SIM_MAGIC_STREAM;
	s->alive = 1;
	s->ctx = c;
	s->next = g_sim.streams;
	g_sim.streams = s;
	*phStream = (CUstream)s;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamDestroy_v2(CUstream hStream)
{
	SIM_LOCK_INIT();
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if ((CUstream)p == hStream && p->alive) {
			p->alive = 0;
			SIM_UNLOCK_RETURN(CUDA_SUCCESS);
		}
	}
	SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
}

CUresult simi_cuStreamDestroy(CUstream hStream)
{
	return simi_cuStreamDestroy_v2(hStream);
}

struct sim_stream *sim_stream_find(CUstream h)
{
	for (struct sim_stream *p = g_sim.streams; p; p = p->next)
		if ((CUstream)p == h && p->alive && sim_ctx_valid(p->ctx))
			return p;
	return NULL;
}

int sim_stream_capture(CUstream h)
{
	struct sim_stream *p = sim_stream_find(h);
	return p ? p->capture : CU_STREAM_CAPTURE_STATUS_NONE;
}

void sim_stream_invalidate(CUstream h)
{
	struct sim_stream *p = sim_stream_find(h);
	if (p && p->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
		p->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

void sim_streams_ctx_destroyed(struct sim_ctx *c)
{
	for (struct sim_stream *s = g_sim.streams; s; s = s->next)
		if (s->ctx == c)
			s->alive = 0;
}

/*
 * The simulated GPU finishes work as it is queued, so a host function runs
 * at once (on the caller's thread, after the driver's lock is dropped; a
 * real driver runs it later on a thread of its own, and it must not call
 * the CUDA API either way). While the stream captures, it becomes a node of
 * the captured graph instead, and does not run now.
 */
CUresult simi_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	if (!fn)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int capturing = sim_stream_capture(hStream) != CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&g_sim.mu);
	if (!capturing)
		fn(userData);
	return CUDA_SUCCESS;
}

CUresult simi_cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	return simi_cuLaunchHostFunc(hStream, fn, userData);
}

CUresult simi_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	struct sim_ctx *c = sim_stream_ctx(hStream, &rc);
	if (!c)
		SIM_UNLOCK_RETURN(rc);
	if (!f)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ ||
	    (unsigned long long)blockDimX * blockDimY * blockDimZ > 1024 || blockDimZ > 64 ||
	    gridDimY > 65535 || gridDimZ > 65535 || sharedMemBytes > 232448 ||
	    (kernelParams && extra))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	/* A library's kernel loads into the context at its first launch there. */
	SIM_UNLOCK_RETURN(sim_module_launch(c, f));
}

CUresult simi_cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                  unsigned int gridDimZ, unsigned int blockDimX,
                                  unsigned int blockDimY, unsigned int blockDimZ,
                                  unsigned int sharedMemBytes, CUstream hStream,
                                  void **kernelParams, void **extra)
{
	return simi_cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
	                           sharedMemBytes, hStream, kernelParams, extra);
}
