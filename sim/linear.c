/*
 * linear.c - linear device memory: cuMemAlloc, cuMemAllocPitch,
 * cuMemAllocManaged, and their 32-bit forms (addresses below 4 GiB). Freed
 * by free.c.
 */
#include "driver.h"

#include <stdlib.h>

/* Blocks over 1 MiB take whole 2 MiB pages of their own; smaller ones are
 * carved from pages the context keeps (small.c). Both as driver 580 does
 * on an H200 (bench/gpu/driver_facts). */
#define SIM_SMALL_MAX ((size_t)1 << 20)

/* cuMemAlloc and its kin are "potentially unsafe" during capture (cuda.h,
 * cuThreadExchangeStreamCaptureMode: "a call to cudaMalloc may be unsafe").
 * Managed memory (managed set) is charged as asked. */
static CUresult linear_alloc(CUdeviceptr *dptr, size_t size, int managed, int low)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	struct sim_dev *d;
	struct sim_alloc *a;
	CUdeviceptr p;
	if (!c || (rc = sim_capture_unsafe()) != CUDA_SUCCESS)
		return rc;
	d = sim_ctx_dev(c);
	if (low) {
		p = sim_round_up(g_sim.low_next, 512);
		if (p + size > 0xf0000000ull)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		p = sim_addr_alloc(d, size, 512);
		if (!p)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!managed && size <= SIM_SMALL_MAX) {
		rc = sim_small_take(c, size, &a->page, &a->first, &a->granules);
	} else {
		a->charged = managed ? size : sim_round_up(size, SIM_GRANULARITY);
		rc = sim_charge(d, a->charged);
	}
	if (rc != CUDA_SUCCESS) {
		free(a);
		return rc;
	}
	if (low)
		g_sim.low_next = p + sim_round_up(size, 512);
	a->ptr = p;
	a->size = size;
	a->kind = SIM_ALLOC_LINEAR;
	a->managed = managed;
	a->dev = c->dev;
	a->ctx = c;
	sim_alloc_insert(a);
	*dptr = p;
	return CUDA_SUCCESS;
}

CUresult simi_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	SIM_UNLOCK_RETURN(linear_alloc(dptr, bytesize, 0, 0));
}

CUresult simi_cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
	CUdeviceptr p;
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	CUresult rc = linear_alloc(&p, bytesize, 0, 1);
	if (rc == CUDA_SUCCESS)
		*dptr = (unsigned int)p;
	SIM_UNLOCK_RETURN(rc);
}

#define SIM_PITCH_ALIGN 512

CUresult simi_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                 size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch;
	SIM_LOCK_INIT();
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	pitch = sim_round_up(WidthInBytes, SIM_PITCH_ALIGN);
	if (pitch < WidthInBytes || Height > SIZE_MAX / pitch)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	CUresult rc = linear_alloc(dptr, pitch * Height, 0, 0);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuMemAllocPitch(unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                              unsigned int Height, unsigned int ElementSizeBytes)
{
	size_t pitch;
	CUdeviceptr p;
	SIM_LOCK_INIT();
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	pitch = sim_round_up(WidthInBytes, SIM_PITCH_ALIGN);
	if ((uint64_t)pitch * Height > 0xffffffffu)
		SIM_UNLOCK_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
	CUresult rc = linear_alloc(&p, pitch * Height, 0, 1);
	if (rc == CUDA_SUCCESS) {
		*dptr = (unsigned int)p;
		*pPitch = (unsigned int)pitch;
	}
	SIM_UNLOCK_RETURN(rc);
}

CUresult simi_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	SIM_LOCK_INIT();
	if (!dptr || bytesize == 0 ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	SIM_UNLOCK_RETURN(linear_alloc(dptr, bytesize, 1, 0));
}
