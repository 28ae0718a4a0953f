/*
 * array.c - wrappers of the entry points that create or destroy CUDA arrays
 * and mipmapped arrays (wrap.h): a bound is charged before the call, then
 * settled to the driver's own figure where it can say.
 */
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "hook/wrap.h"

/* The driver's size of an array or mipmapped array (its
 * cu[Mipmapped]ArrayGetMemoryRequirements), or 0 where it cannot say. */
static uint64_t array_size(int kind, uint64_t key, struct vr_dev *d)
{
	CUDA_ARRAY_MEMORY_REQUIREMENTS r;
	memset(&r, 0, sizeof r);
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
	if (kind == VR_KIND_ARRAY && vr_real.cuArrayGetMemoryRequirements)
		VR_OWN(rc = vr_real.cuArrayGetMemoryRequirements(&r, (CUarray)(uintptr_t)key,
		                                                 d->handle));
	else if (kind == VR_KIND_MIPMAP && vr_real.cuMipmappedArrayGetMemoryRequirements)
		VR_OWN(rc = vr_real.cuMipmappedArrayGetMemoryRequirements(
		           &r, (CUmipmappedArray)(uintptr_t)key, d->handle));
	return rc == CUDA_SUCCESS ? r.size : 0;
}

/*
 * After a successful allocation charged at `charged`: record it. Arrays:
 * their layout is the driver's; a bound was charged before the call
 * (array_bound), and the record settles to cuArrayGetMemoryRequirements'
 * size (CUDA 11.6+; older drivers keep the bound). If the true size does not fit, the
 * array is destroyed and the call refused, so the cap is never passed.
 * Returns what the wrapper returns.
 */
static CUresult settle_array(struct vr_dev *d, int kind, uint64_t key, uint64_t charged)
{
	uint64_t actual = array_size(kind, key, d);
	if (actual == 0 || actual == charged) {
		record(d, kind, key, charged);
		return CUDA_SUCCESS;
	}
	if (actual < charged) {
		vr_policy_release(d, charged - actual);
	} else if (vr_policy_reserve(d, actual - charged) != 0) {
		int can_undo = kind == VR_KIND_ARRAY ? vr_real.cuArrayDestroy != NULL
		                                     : vr_real.cuMipmappedArrayDestroy != NULL;
		if (!can_undo) { /* keep what was charged */
			record(d, kind, key, charged);
			return CUDA_SUCCESS;
		}
		if (kind == VR_KIND_ARRAY)
			VR_OWN(vr_real.cuArrayDestroy((CUarray)(uintptr_t)key));
		else
			VR_OWN(vr_real.cuMipmappedArrayDestroy((CUmipmappedArray)(uintptr_t)key));
		vr_policy_release(d, charged);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	record(d, kind, key, actual);
	vr_gt_answered(); /* a larger array's grant: its bytes are on the card */
	return CUDA_SUCCESS;
}

/* An array charged at bytes on d: charge (or refuse), call, settle. */
#define VR_ALLOC_ARRAY(d, kind, bytes, call, key)                                                  \
	do {                                                                                       \
		if (charge(d, bytes) != CUDA_SUCCESS)                                              \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		VR_CALL(d, bytes, call);                                                           \
		return settle_array(d, kind, key, bytes);                                          \
	} while (0)

/* Bytes per channel; an unknown format is counted at the widest (4). */
static uint64_t format_bytes(CUarray_format f)
{
	size_t b = vr_array_format_bytes(f);
	return b ? b : 4;
}

static inline uint64_t dim(size_t x)
{
	return x ? x : 1;
}

/*
 * What the driver can take for an array, charged before the call. Where the
 * driver can say (cuArrayGetMemoryRequirements, CUDA 11.6+) the charge then
 * settles to its figure; older drivers cannot, so the bound must hold on its
 * own: every row padded to 64 bytes and 2D/3D arrays to whole 8-row tiles
 * (the block-linear layout's smallest tile), the whole rounded up to 64 KiB
 * (the array alignment drivers report, and the page an array occupies at
 * least). Never less than the driver takes; a tiny array costs 64 KiB.
 */
#define ARRAY_ROW  64u
#define ARRAY_TILE 8u
#define ARRAY_PAGE (64u * 1024)

/* Bytes of one w x h x d level (h, d: 0 for none), saturating. */
static uint64_t level_bound(uint64_t w, uint64_t h, uint64_t dd, uint64_t elem)
{
	if (w > UINT64_MAX / elem)
		return UINT64_MAX;
	uint64_t v = round_up(w * elem, ARRAY_ROW);
	uint64_t f[2] = {h > 1 ? round_up(h, ARRAY_TILE) : 1, dd ? dd : 1};
	for (int i = 0; i < 2; i++) {
		if (v > UINT64_MAX / f[i])
			return UINT64_MAX;
		v *= f[i];
	}
	return v;
}

/* The bound of an array of `levels` mipmap levels (1: a plain array). */
static uint64_t array_bound(const CUDA_ARRAY3D_DESCRIPTOR *p, unsigned levels)
{
	uint64_t sum = 0, elem = format_bytes(p->Format) * dim(p->NumChannels);
	for (unsigned l = 0; l < levels && l < 64; l++) {
		uint64_t v = level_bound(dim(p->Width >> l), p->Height ? dim(p->Height >> l) : 0,
		                         p->Depth ? dim(p->Depth >> l) : 0, elem);
		if (v > UINT64_MAX - ARRAY_PAGE - sum)
			return UINT64_MAX;
		sum += v;
	}
	return round_up(sum, ARRAY_PAGE);
}

VR_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *p)
{
	VR_PASS(cuArrayCreate_v2, (pHandle, p));
	if (!pHandle || !p || p->Width == 0)
		return vr_real.cuArrayCreate_v2(pHandle, p);
	VR_CURRENT_DEVICE(d);
	CUDA_ARRAY3D_DESCRIPTOR p3 = {.Width = p->Width,
	                              .Height = p->Height,
	                              .Format = p->Format,
	                              .NumChannels = p->NumChannels};
	uint64_t bound = array_bound(&p3, 1);
	if (bound == UINT64_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_ALLOC_ARRAY(d, VR_KIND_ARRAY, bound, vr_real.cuArrayCreate_v2(pHandle, p),
	               (uintptr_t)*pHandle);
}

VR_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *p)
{
	VR_PASS(cuArray3DCreate_v2, (pHandle, p));
	if (!pHandle || !p || p->Width == 0)
		return vr_real.cuArray3DCreate_v2(pHandle, p);
	VR_CURRENT_DEVICE(d);
	uint64_t bound = array_bound(p, 1);
	if (bound == UINT64_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_ALLOC_ARRAY(d, VR_KIND_ARRAY, bound, vr_real.cuArray3DCreate_v2(pHandle, p),
	               (uintptr_t)*pHandle);
}

VR_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
	VR_PASS(cuArrayDestroy, (hArray));
	VR_FREE(VR_KIND_ARRAY, (uintptr_t)hArray, vr_real.cuArrayDestroy(hArray));
}

VR_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                          const CUDA_ARRAY3D_DESCRIPTOR *p,
                                          unsigned int numMipmapLevels)
{
	VR_PASS(cuMipmappedArrayCreate, (pHandle, p, numMipmapLevels));
	if (!pHandle || !p || p->Width == 0 || numMipmapLevels == 0)
		return vr_real.cuMipmappedArrayCreate(pHandle, p, numMipmapLevels);
	VR_CURRENT_DEVICE(d);
	uint64_t bound = array_bound(p, numMipmapLevels);
	if (bound == UINT64_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_ALLOC_ARRAY(d, VR_KIND_MIPMAP, bound,
	               vr_real.cuMipmappedArrayCreate(pHandle, p, numMipmapLevels),
	               (uintptr_t)*pHandle);
}

VR_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	VR_PASS(cuMipmappedArrayDestroy, (h));
	VR_FREE(VR_KIND_MIPMAP, (uintptr_t)h, vr_real.cuMipmappedArrayDestroy(h));
}
