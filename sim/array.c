/*
 * array.c - CUDA arrays and mipmapped arrays (cuArrayCreate,
 * cuArray3DCreate, cuMipmappedArrayCreate, their destroy and memory
 * requirements): each takes its levels' bytes, rounded up to 64 KiB pages,
 * and goes with its context.
 */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

struct array {
	int mip;
	int dev;
	size_t size;
	struct sim_ctx *ctx;
	int alive;
	struct array *next;
};

static struct array *g_arrays;

#define SIM_ARRAY_PAGE ((size_t)64 << 10)

/* Bytes of one level; 0 when the description is invalid or overflows. */
static size_t level_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
	size_t e = vr_array_format_bytes(f), n;
	if (!e || (ch != 1 && ch != 2 && ch != 4) || w == 0)
		return 0;
	n = e * ch;
	if (w > SIZE_MAX / n)
		return 0;
	n *= w;
	if (h && n > SIZE_MAX / h)
		return 0;
	n *= h ? h : 1;
	if (d && n > SIZE_MAX / d)
		return 0;
	return n * (d ? d : 1);
}

static CUresult array_create(void **out, size_t bytes, int mip)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = sim_cur_ctx(&rc);
	if (!c)
		return rc;
	if (bytes == 0 || bytes > SIZE_MAX - SIM_ARRAY_PAGE)
		return CUDA_ERROR_INVALID_VALUE;
	struct array *a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = sim_round_up(bytes, SIM_ARRAY_PAGE);
	a->dev = c->dev;
	a->ctx = c;
	a->mip = mip;
	if (sim_charge(sim_ctx_dev(c), a->size) != CUDA_SUCCESS) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->alive = 1;
	a->next = g_arrays;
	g_arrays = a;
	*out = a;
	return CUDA_SUCCESS;
}

CUresult simi_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	SIM_LOCK_INIT();
	if (!pHandle || !desc)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	size_t n = level_bytes(desc->Width, desc->Height, 0, desc->Format, desc->NumChannels);
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, n, 0));
}

CUresult simi_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	SIM_LOCK_INIT();
	if (!pHandle || !desc || (desc->Depth && !desc->Height))
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	size_t n =
	    level_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, n, 0));
}

CUresult simi_cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                     unsigned int numMipmapLevels)
{
	size_t total = 0, w, h, d;
	SIM_LOCK_INIT();
	if (!pHandle || !desc || numMipmapLevels == 0 || numMipmapLevels > 32)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	w = desc->Width;
	h = desc->Height;
	d = desc->Depth;
	for (unsigned l = 0; l < numMipmapLevels; l++) {
		size_t n = level_bytes(w, h, d, desc->Format, desc->NumChannels);
		if (!n || total > SIZE_MAX - n)
			SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
		total += n;
		w = w > 1 ? w / 2 : 1;
		h = h > 1 ? h / 2 : h;
		d = d > 1 ? d / 2 : d;
	}
	SIM_UNLOCK_RETURN(array_create((void **)pHandle, total, 1));
}

static struct array *array_lookup(const void *h, int mip)
{
	for (struct array *a = g_arrays; a; a = a->next)
		if (a == h)
			return a->alive && a->mip == mip ? a : NULL;
	return NULL;
}

static CUresult array_destroy(const void *h, int mip)
{
	SIM_LOCK_INIT();
	struct array *a = array_lookup(h, mip);
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	a->alive = 0;
	sim_uncharge(&g_sim.dev[a->dev], a->size);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuArrayDestroy(CUarray hArray)
{
	return array_destroy(hArray, 0);
}

CUresult simi_cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_destroy(hMipmappedArray, 1);
}

static CUresult array_reqs(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, const void *h, int mip,
                           CUdevice device)
{
	SIM_LOCK_INIT();
	struct array *a = array_lookup(h, mip);
	if (!req)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (!a)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_HANDLE);
	if (device < 0 || device >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	memset(req, 0, sizeof(*req));
	req->size = a->size;
	req->alignment = SIM_ARRAY_PAGE;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                           CUarray array, CUdevice device)
{
	return array_reqs(memoryRequirements, array, 0, device);
}

CUresult
simi_cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
                                           CUmipmappedArray mipmap, CUdevice device)
{
	return array_reqs(memoryRequirements, mipmap, 1, device);
}

void sim_array_ctx_destroyed(struct sim_ctx *c)
{
	for (struct array *ar = g_arrays; ar; ar = ar->next)
		if (ar->alive && ar->ctx == c) {
			ar->alive = 0;
			sim_uncharge(&g_sim.dev[ar->dev], ar->size);
		}
}

void sim_array_after_fork(void)
{
	SIM_FREE_LIST(struct array, g_arrays);
}
