/*
 * capture.c - stream capture (cuStreamBeginCapture, EndCapture,
 * IsCapturing, cuThreadExchangeStreamCaptureMode) and the calls a capture
 * forbids (sim_capture_unsafe). A capture records nothing: its graph is
 * empty.
 */
#include "driver.h"

/* This thread's capture interaction mode (cuThreadExchangeStreamCaptureMode). */
static __thread int t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/*
 * cuda.h, CUstreamCaptureMode: in GLOBAL mode (the default) a thread is
 * prohibited from potentially unsafe calls while it has a capture of its
 * own not begun RELAXED, or another thread has one begun GLOBAL;
 * THREAD_LOCAL ignores other threads; RELAXED prohibits nothing.
 */
CUresult sim_capture_unsafe(void)
{
	int unsafe = 0;
	pthread_t self = pthread_self();
	if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	for (struct sim_stream *p = g_sim.streams; p; p = p->next) {
		if (p->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
			continue;
		int mine = pthread_equal(p->capture_thread, self);
		if ((mine && p->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
		    (!mine && t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
		     p->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
			p->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
			unsafe = 1;
		}
	}
	return unsafe ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult simi_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	SIM_LOCK_INIT();
	if (!mode || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
	    *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	int old = t_capture_mode;
	t_capture_mode = *mode;
	*mode = old;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	struct sim_stream *p = sim_stream_find(hStream);
	if (!p) /* the legacy and per-thread default streams cannot capture */
		SIM_UNLOCK_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (p->capture != CU_STREAM_CAPTURE_STATUS_NONE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_ILLEGAL_STATE);
	p->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	p->capture_mode = mode;
	p->capture_thread = pthread_self();
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* Ends the capture: an (empty) graph, or CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * with no graph when an unsafe call broke it. */
CUresult simi_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	SIM_LOCK_INIT();
	struct sim_stream *p = sim_stream_find(hStream);
	if (!phGraph)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!p || p->capture == CU_STREAM_CAPTURE_STATUS_NONE)
		SIM_UNLOCK_RETURN(CUDA_ERROR_ILLEGAL_STATE);
	int was = p->capture;
	p->capture = CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&g_sim.mu);
	*phGraph = NULL;
	if (was == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	return simi_cuGraphCreate(phGraph, 0);
}

CUresult simi_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CUresult rc = CUDA_SUCCESS;
	SIM_LOCK_INIT();
	if (!sim_stream_ctx(hStream, &rc))
		SIM_UNLOCK_RETURN(rc);
	if (!captureStatus)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*captureStatus = sim_stream_capture(hStream);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return simi_cuStreamIsCapturing(hStream, captureStatus);
}
