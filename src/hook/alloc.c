/*
 * alloc.c - wrappers of the entry points that create or free device memory
 * one allocation at a time: linear, pitch, managed, virtual-memory handles,
 * arrays, graph memory nodes, and pinned host memory (counted apart).
 *
 * The pattern everywhere: reserve in the books, call the driver, record the
 * allocation; if the driver fails, release and return its code unchanged.
 * A free takes the record out first (so a concurrent allocation that gets
 * the same address back is never confused with it), calls the driver, and
 * puts the record back if the driver refused. Unknown keys (imports, memory
 * allocated before a cap applied, another library's) pass untouched.
 */
#include <string.h>

#define VR_CUDA_PROTOTYPES
#include "hook/devices.h"
#include "hook/policy.h"
#include "hook/books.h"
#include "hook/ptrmap.h"
#include "hook/spill.h"
#include "hook/record.h"

static inline uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

/* The device of the current context into d, or return the error of the
 * look-up that failed: an allocation is refused, never made uncounted. */
#define VR_CURRENT_DEVICE(d)                                                                       \
	struct vr_dev *d;                                                                          \
	do {                                                                                       \
		CUresult dev_rc_ = vr_dev_for_alloc(&d);                                           \
		if (dev_rc_ != CUDA_SUCCESS)                                                       \
			return dev_rc_;                                                            \
	} while (0)

/* Reserves, or explains and refuses. */
static inline CUresult charge(struct vr_dev *d, uint64_t bytes)
{
	return vr_policy_reserve(d, bytes) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The context that owns an allocation of this kind: linear memory, arrays
 * and cuMemAllocHost's pinned memory go with their context (destroyed or
 * reset, the driver frees them: context.c); 0 for the rest, and when the
 * driver cannot say. */
static uint64_t owner_of(int kind)
{
	CUcontext c = NULL;
	if (kind != VR_KIND_LINEAR && kind != VR_KIND_ARRAY && kind != VR_KIND_MIPMAP &&
	    kind != VR_KIND_HOST)
		return 0;
	if (!vr_real.cuCtxGetCurrent || vr_real.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
		return 0;
	return (uint64_t)(uintptr_t)c;
}

/* After a successful allocation: remember it, or forget the charge if the
 * map cannot grow (never released twice). */
static inline __attribute__((always_inline)) void record(struct vr_dev *d, int kind, uint64_t key,
                                                         uint64_t bytes)
{
	if (VR_UNLIKELY(!atomic_load_explicit(&d->first_block, memory_order_relaxed)))
		atomic_store_explicit(&d->first_block, bytes, memory_order_relaxed);
	if (vr_map_put_owned(kind, key, d->ordinal, bytes, owner_of(kind),
	                     vr_rec_alloc(d, bytes)) != 0) {
		vr_policy_release(d, bytes);
		vr_log(VR_LOG_WARN,
		       "out of memory for the allocation map; an allocation of "
		       "GPU %d goes uncounted",
		       d->ordinal);
	}
}

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
	return CUDA_SUCCESS;
}

static inline __attribute__((always_inline)) CUresult settle(struct vr_dev *d, int kind,
                                                             uint64_t key, uint64_t charged)
{
	if (kind == VR_KIND_ARRAY || kind == VR_KIND_MIPMAP)
		return settle_array(d, kind, key, charged);
	record(d, kind, key, charged);
	return CUDA_SUCCESS;
}

/* Calls the driver for an allocation already charged at bytes on d, then
 * settles it under key (read only after a successful call), or releases the
 * charge and returns the driver's code if it failed. */
#define VR_CALL_SETTLE(d, kind, bytes, call, key)                                                  \
	do {                                                                                       \
		CUresult rc_;                                                                      \
		VR_OWN(rc_ = call);                                                                \
		if (rc_ != CUDA_SUCCESS) {                                                         \
			vr_policy_release(d, bytes);                                               \
			return rc_;                                                                \
		}                                                                                  \
		return settle(d, kind, key, bytes);                                                \
	} while (0)

/* An allocation charged at bytes on d: charge (or refuse), call, settle. */
#define VR_ALLOC(d, kind, bytes, call, key)                                                        \
	do {                                                                                       \
		if (charge(d, bytes) != CUDA_SUCCESS)                                              \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		VR_CALL_SETTLE(d, kind, bytes, call, key);                                         \
	} while (0)

/* The same for a path that may spill (spill.h): past the cap, `spill` answers. */
#define VR_ALLOC_SPILL(d, kind, bytes, call, key, spill)                                           \
	do {                                                                                       \
		int r_ = vr_policy_reserve_spillable(d, bytes);                                    \
		if (r_ > 0)                                                                        \
			return spill;                                                              \
		if (r_ < 0)                                                                        \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		VR_CALL_SETTLE(d, kind, bytes, call, key);                                         \
	} while (0)

/* After the driver's answer to a free of a known record: the bytes go back
 * (pinned host memory, device -1, to its own count), or the record is put
 * back if the driver refused. Returns rc. */
static inline __attribute__((always_inline)) CUresult
settle_free(int kind, uint64_t key, int dev, uint64_t bytes, uint16_t site, CUresult rc)
{
	struct vr_dev *d = kind == VR_KIND_HOST ? NULL : vr_dev_by_ordinal(dev);
	if (rc != CUDA_SUCCESS) {
		vr_map_put(kind, key, dev, bytes, site);
	} else if (kind == VR_KIND_HOST) {
		vr_books_pinned(-(int64_t)bytes);
	} else if (d) {
		vr_policy_release(d, bytes);
		vr_rec_freed(dev);
	}
	return rc;
}

/* A free: take the record, call the driver, settle. */
#define VR_FREE(kind, key, call)                                                                   \
	do {                                                                                       \
		int dev_;                                                                          \
		uint64_t bytes_;                                                                   \
		uint16_t site_ = 0;                                                                \
		int known_ = vr_map_take(kind, key, &dev_, &bytes_, &site_);                       \
		CUresult rc_;                                                                      \
		VR_OWN(rc_ = call);                                                                \
		return known_ ? settle_free(kind, key, dev_, bytes_, site_, rc_) : rc_;            \
	} while (0)

/* ---- linear ---------------------------------------------------------- */

VR_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	VR_PASS(cuMemAlloc_v2, (dptr, bytesize));
	if (!dptr || bytesize == 0)
		return vr_real.cuMemAlloc_v2(dptr, bytesize);
	VR_CURRENT_DEVICE(d);
	uint64_t charged;
	int r = vr_policy_reserve_linear(d, bytesize, 1, &charged);
	if (r > 0)
		return vr_spill_linear(d, dptr, bytesize);
	if (r < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_CALL_SETTLE(d, VR_KIND_LINEAR, charged, vr_real.cuMemAlloc_v2(dptr, bytesize), *dptr);
}

VR_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	VR_PASS(cuMemFree_v2, (dptr));
	CUresult rc;
	if (vr_spill_any() && vr_spill_free(dptr, &rc))
		return rc;
	VR_FREE(VR_KIND_LINEAR, dptr, vr_real.cuMemFree_v2(dptr));
}

/* Stream-ordered frees: pools are settled by what they hold (pools.c), so
 * only spilled blocks need anything here; the rest goes to the driver. */
#define VR_FREE_ASYNC(name, ptsz)                                                                  \
	VR_EXPORT CUresult name(CUdeviceptr dptr, CUstream hStream)                                \
	{                                                                                          \
		VR_PASS(name, (dptr, hStream));                                                    \
		CUresult rc;                                                                       \
		if (vr_spill_any() && vr_spill_free_async(dptr, hStream, ptsz, &rc))               \
			return rc;                                                                 \
		VR_OWN(rc = vr_real.name(dptr, hStream));                                          \
		return rc;                                                                         \
	}
VR_FREE_ASYNC(cuMemFreeAsync, 0)
VR_FREE_ASYNC(cuMemFreeAsync_ptsz, 1)

/* CUDA IPC cannot share host memory: the driver refuses the export of a
 * spilled block; vramctl says why, once. */
static void ipc_spilled(void)
{
	static atomic_int said;
	if (!atomic_exchange(&said, 1))
		vr_log(VR_LOG_WARN, "a block that was spilled to host memory (past the cap) cannot "
		                    "be shared with another process through CUDA IPC; the driver "
		                    "refuses the export");
}

VR_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	VR_PASS(cuIpcGetMemHandle, (pHandle, dptr));
	if (vr_spill_any() && vr_spill_is(VR_KIND_SPILL, dptr))
		ipc_spilled();
	CUresult rc;
	VR_OWN(rc = vr_real.cuIpcGetMemHandle(pHandle, dptr));
	return rc;
}

VR_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType,
                                                unsigned long long flags)
{
	VR_PASS(cuMemExportToShareableHandle, (shareableHandle, handle, handleType, flags));
	if (vr_spill_any() && vr_spill_is(VR_KIND_SPILLVMM, handle))
		ipc_spilled();
	CUresult rc;
	VR_OWN(
	    rc = vr_real.cuMemExportToShareableHandle(shareableHandle, handle, handleType, flags));
	return rc;
}

/* The 32-bit entry points of CUDA 3.1 and before, still exported. */
VR_EXPORT CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
	VR_PASS(cuMemAlloc, (dptr, bytesize));
	if (!dptr || bytesize == 0)
		return vr_real.cuMemAlloc(dptr, bytesize);
	VR_CURRENT_DEVICE(d);
	uint64_t charged;
	if (vr_policy_reserve_linear(d, bytesize, 0, &charged) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_CALL_SETTLE(d, VR_KIND_LINEAR, charged, vr_real.cuMemAlloc(dptr, bytesize), *dptr);
}

VR_EXPORT CUresult cuMemFree(unsigned int dptr)
{
	VR_PASS(cuMemFree, (dptr));
	VR_FREE(VR_KIND_LINEAR, dptr, vr_real.cuMemFree(dptr));
}

VR_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	VR_PASS(cuMemAllocManaged, (dptr, bytesize, flags));
	if (!dptr || bytesize == 0)
		return vr_real.cuMemAllocManaged(dptr, bytesize, flags);
	VR_CURRENT_DEVICE(d);
	VR_ALLOC(d, VR_KIND_LINEAR, bytesize, vr_real.cuMemAllocManaged(dptr, bytesize, flags),
	         *dptr);
}

/*
 * Pitch: the driver picks the pitch. Reserve a bound first (the width
 * rounded up to 512 bytes, the largest pitch alignment NVIDIA GPUs use),
 * then settle to pitch x height. Should a driver ever pick a wider pitch and
 * the difference not fit, the allocation is undone and refused.
 */
VR_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes)
{
	VR_PASS(cuMemAllocPitch_v2, (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	uint64_t bound = round_up(WidthInBytes, 512);
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0)
		return vr_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height,
		                                  ElementSizeBytes);
	if (bound > UINT64_MAX / Height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	VR_CURRENT_DEVICE(d);
	uint64_t host = bound * Height;
	/* Past the cap (with spill on and arguments the driver would take):
	 * the driver's own pitch rule, 512 bytes, on host memory. */
	int r = vr_policy_reserve_linear(d, host, 1, &bound);
	if (r > 0 && (ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16)) {
		CUresult src = vr_spill_linear(d, dptr, host);
		if (src == CUDA_SUCCESS)
			*pPitch = round_up(WidthInBytes, 512);
		return src;
	}
	if (r > 0)
		return vr_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height,
		                                  ElementSizeBytes);
	if (r < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc;
	VR_OWN(
	    rc = vr_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	if (rc != CUDA_SUCCESS) {
		vr_policy_release(d, bound);
		return rc;
	}
	/* Settled as it was charged: in pages, or as asked where the pages did
	 * not fit (vr_policy_reserve_linear). */
	int as_asked = bound == host && vr_on_card(host) != host;
	uint64_t actual = (uint64_t)*pPitch * Height;
	if (!as_asked)
		actual = vr_on_card(actual);
	if (actual < bound) {
		vr_policy_release(d, bound - actual);
	} else if (actual > bound && vr_policy_reserve(d, actual - bound) != 0) {
		if (!vr_real.cuMemFree_v2) { /* cannot undo: keep what was charged */
			record(d, VR_KIND_LINEAR, *dptr, bound);
			return rc;
		}
		VR_OWN(vr_real.cuMemFree_v2(*dptr));
		vr_policy_release(d, bound);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	record(d, VR_KIND_LINEAR, *dptr, actual);
	return rc;
}

/* ---- virtual memory -------------------------------------------------- */

/* Physical memory on a device location only. Address reservations
 * (cuMemAddressReserve) are address space, never counted: PyTorch's
 * expandable segments reserve more than the whole device. */
VR_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
	VR_PASS(cuMemCreate, (handle, size, prop, flags));
	struct vr_dev *d = NULL;
	if (!prop || !handle || !size || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return vr_real.cuMemCreate(handle, size, prop, flags);
	CUresult dev_rc = vr_dev_for_handle(prop->location.id, &d);
	if (dev_rc != CUDA_SUCCESS)
		return dev_rc;
	VR_ALLOC_SPILL(d, VR_KIND_VMM, size, vr_real.cuMemCreate(handle, size, prop, flags),
	               *handle, vr_spill_vmm(d, handle, size, prop, flags));
}

VR_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	VR_PASS(cuMemRelease, (handle));
	CUresult rc;
	if (vr_spill_any() && vr_spill_release_handle(handle, &rc))
		return rc;
	VR_FREE(VR_KIND_VMM, handle, vr_real.cuMemRelease(handle));
}

/* ---- arrays ---------------------------------------------------------- */

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
	VR_ALLOC(d, VR_KIND_ARRAY, bound, vr_real.cuArrayCreate_v2(pHandle, p),
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
	VR_ALLOC(d, VR_KIND_ARRAY, bound, vr_real.cuArray3DCreate_v2(pHandle, p),
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
	VR_ALLOC(d, VR_KIND_MIPMAP, bound,
	         vr_real.cuMipmappedArrayCreate(pHandle, p, numMipmapLevels), (uintptr_t)*pHandle);
}

VR_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	VR_PASS(cuMipmappedArrayDestroy, (h));
	VR_FREE(VR_KIND_MIPMAP, (uintptr_t)h, vr_real.cuMipmappedArrayDestroy(h));
}

/* ---- graph memory nodes ---------------------------------------------- */

/*
 * Policy: a graph's memory nodes are charged when the graph is instantiated,
 * at the sum of their sizes on each device (an upper bound: the driver may
 * reuse memory between nodes of one graph), and given back when the
 * executable graph is destroyed. An instantiation that does not fit is
 * refused with CUDA_ERROR_OUT_OF_MEMORY, before the driver commits anything.
 * Nodes captured from cuMemAllocAsync come through the pool path instead.
 */
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
		uint64_t need_[VR_MAX_DEVICES];                                                    \
		if (graph_reserve(hGraph, need_) != CUDA_SUCCESS) {                                \
			refused;                                                                   \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		}                                                                                  \
		CUresult rc_;                                                                      \
		VR_OWN(rc_ = call);                                                                \
		return graph_settle(need_, rc_, phGraphExec);                                      \
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

/* ---- pinned host memory: counted apart, never capped ------------------ */

/* Pinned host memory, owned by the context `owner` (0: none) when the
 * driver frees it with that context (context.c). */
static void note_host(void *p, size_t bytes, uint64_t owner)
{
	if (vr_map_put_owned(VR_KIND_HOST, (uintptr_t)p, -1, bytes, owner,
	                     vr_rec_alloc(NULL, bytes)) == 0)
		vr_books_pinned((int64_t)bytes);
}

VR_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	VR_PASS(cuMemAllocHost_v2, (pp, bytesize));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemAllocHost_v2(pp, bytesize));
	/* NVIDIA's cuCtxDestroy reference names cuMemAllocHost's memory among
	 * what a context takes with it (not cuMemHostAlloc's). */
	if (rc == CUDA_SUCCESS && pp)
		note_host(*pp, bytesize, owner_of(VR_KIND_HOST));
	return rc;
}

VR_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	VR_PASS(cuMemHostAlloc, (pp, bytesize, Flags));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemHostAlloc(pp, bytesize, Flags));
	if (rc == CUDA_SUCCESS && pp)
		note_host(*pp, bytesize, 0);
	return rc;
}

VR_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	VR_PASS(cuMemHostRegister_v2, (p, bytesize, Flags));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemHostRegister_v2(p, bytesize, Flags));
	if (rc == CUDA_SUCCESS)
		note_host(p, bytesize, 0);
	return rc;
}

VR_EXPORT CUresult cuMemFreeHost(void *p)
{
	VR_PASS(cuMemFreeHost, (p));
	VR_FREE(VR_KIND_HOST, (uintptr_t)p, vr_real.cuMemFreeHost(p));
}

VR_EXPORT CUresult cuMemHostUnregister(void *p)
{
	VR_PASS(cuMemHostUnregister, (p));
	VR_FREE(VR_KIND_HOST, (uintptr_t)p, vr_real.cuMemHostUnregister(p));
}
