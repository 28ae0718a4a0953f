/*
 * alloc.c - wrappers of the entry points that create or free linear device
 * memory (cuMemAlloc, pitch, managed), virtual-memory handles and pinned
 * host memory (counted apart), one allocation at a time (wrap.h); arrays
 * are array.c's, graph memory nodes graph.c's.
 */
#define VR_CUDA_PROTOTYPES
#include "hook/spill.h"
#include "hook/wrap.h"

/* ---- linear ---------------------------------------------------------- */

/* After the driver's answer rc for a short block (charged less than its
 * pages, vr_policy_reserve_linear) at key: recorded and made d's short
 * block, or released. Returns rc. */
static CUresult settle_short(struct vr_dev *d, uint64_t key, uint64_t charged, CUresult rc)
{
	if (rc != CUDA_SUCCESS) {
		vr_card_landed();
		vr_policy_release(d, charged);
		vr_policy_short_settle(d, 0);
		return rc;
	}
	vr_policy_short_settle(d, key);
	record(d, VR_KIND_LINEAR, key, charged);
	return rc;
}

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
	if (VR_UNLIKELY(charged < vr_on_card(bytesize)) && d) {
		CUresult rc;
		VR_DRIVER(rc = vr_real.cuMemAlloc_v2(dptr, bytesize));
		return settle_short(d, rc == CUDA_SUCCESS ? *dptr : 0, charged, rc);
	}
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
	vr_park_unsupported("CUDA IPC memory (cuIpcGetMemHandle)");
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
	vr_park_unsupported("shared GPU memory (cuMemExportToShareableHandle)");
	if (vr_spill_any() && vr_spill_is(VR_KIND_SPILLVMM, handle))
		ipc_spilled();
	CUresult rc;
	VR_OWN(
	    rc = vr_real.cuMemExportToShareableHandle(shareableHandle, handle, handleType, flags));
	return rc;
}

/* Imports: nothing of the books' (the exporter's memory), but a process
 * that holds one is never parked (park.h). */
VR_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	VR_PASS(cuIpcOpenMemHandle, (pdptr, handle, Flags));
	vr_park_unsupported("CUDA IPC memory (cuIpcOpenMemHandle)");
	CUresult rc;
	VR_OWN(rc = vr_real.cuIpcOpenMemHandle(pdptr, handle, Flags));
	return rc;
}

VR_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                         unsigned int Flags)
{
	VR_PASS(cuIpcOpenMemHandle_v2, (pdptr, handle, Flags));
	vr_park_unsupported("CUDA IPC memory (cuIpcOpenMemHandle)");
	CUresult rc;
	VR_OWN(rc = vr_real.cuIpcOpenMemHandle_v2(pdptr, handle, Flags));
	return rc;
}

VR_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                  void *osHandle,
                                                  CUmemAllocationHandleType shHandleType)
{
	VR_PASS(cuMemImportFromShareableHandle, (handle, osHandle, shHandleType));
	vr_park_unsupported("shared GPU memory (cuMemImportFromShareableHandle)");
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemImportFromShareableHandle(handle, osHandle, shHandleType));
	return rc;
}

/* The driver's answer; where it has none for a pointer inside a spilled
 * block (a driver that knows the block only as mapped host memory answers
 * CUDA_ERROR_NOT_FOUND), the block's base and size from vramctl's own map,
 * as a program that called cuMemAlloc expects. The 32-bit form
 * cannot name a spilled block (cuMemAlloc never spills). */
VR_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	VR_PASS(cuMemGetAddressRange_v2, (pbase, psize, dptr));
	CUresult rc;
	VR_OWN(rc = vr_real.cuMemGetAddressRange_v2(pbase, psize, dptr));
	if (rc != CUDA_SUCCESS && vr_spill_any() && vr_spill_range(dptr, pbase, psize))
		return CUDA_SUCCESS;
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
	if (VR_UNLIKELY(charged < vr_on_card(bytesize)) && d) {
		CUresult rc;
		VR_DRIVER(rc = vr_real.cuMemAlloc(dptr, bytesize));
		return settle_short(d, rc == CUDA_SUCCESS ? *dptr : 0, charged, rc);
	}
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
	vr_park_unsupported("managed memory (cuMemAllocManaged)");
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
	/* Past the cap (with spill on): the driver's own pitch rule, 512
	 * bytes, on host memory. An element size the driver documents as
	 * invalid (only 4, 8 and 16) is refused as it would be: passed on with
	 * nothing reserved, a driver that took it would hold an uncapped block
	 *. */
	int r = vr_policy_reserve_linear(d, host, 1, &bound);
	if (r > 0 && ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
		return CUDA_ERROR_INVALID_VALUE;
	if (r > 0) {
		CUresult src = vr_spill_linear(d, dptr, host);
		if (src == CUDA_SUCCESS)
			*pPitch = round_up(WidthInBytes, 512);
		return src;
	}
	if (r < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc;
	VR_DRIVER(
	    rc = vr_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	/* Settled as it was charged: in pages, or as asked where the pages did
	 * not fit (vr_policy_reserve_linear: a short block). */
	int as_asked = d && bound == host && vr_on_card(host) != host;
	if (rc != CUDA_SUCCESS) {
		vr_card_landed();
		vr_policy_release(d, bound);
		if (as_asked)
			vr_policy_short_settle(d, 0);
		return rc;
	}
	if (as_asked)
		vr_policy_short_settle(d, *dptr);
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
		if (as_asked)
			vr_policy_short_settle(d, 0);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	record(d, VR_KIND_LINEAR, *dptr, actual);
	vr_gt_answered(); /* a wider pitch's grant: its bytes are on the card */
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
