/*
 * spill.h - past the cap, host memory the GPU reads in place (spill.c;
 * VRAMCTL_SPILL, docs/spill.md). Beside pools: the wrappers call it when
 * the policy says a request that may spill does not fit on the device.
 */
#ifndef VRAMCTL_HOOK_SPILL_H
#define VRAMCTL_HOOK_SPILL_H

#include "hook/dev.h"
#include "hook/hook.h"

/* Blocks spilled by this process and not yet freed: the free paths look
 * for spilled blocks only while there are some. */
extern atomic_long vr_spill_live;
/* Frees queued on a stream whose stream has reached them. */
extern atomic_long vr_spill_ready;

/*
 * Serve bytes past d's cap from host memory: mapped pinned memory for
 * linear allocations (*dptr), a host-location handle for cuMemCreate
 * (*handle; prop is the program's). CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY after one denial line saying why spill could not
 * serve it either (budget, pinning, driver support).
 */
CUresult vr_spill_linear(struct vr_dev *d, CUdeviceptr *dptr, uint64_t bytes);
CUresult vr_spill_vmm(struct vr_dev *d, CUmemGenericAllocationHandle *handle, size_t size,
                      const CUmemAllocationProp *prop, unsigned long long flags);

/* Frees of spilled blocks through the call that matches how they were made.
 * Each returns 1 with *rc set when the key was a spilled block, 0 otherwise
 * (nothing done). */
int vr_spill_free(CUdeviceptr dptr, CUresult *rc);
int vr_spill_free_async(CUdeviceptr dptr, CUstream s, int ptsz, CUresult *rc);
int vr_spill_release_handle(CUmemGenericAllocationHandle h, CUresult *rc);

/* 1 if key (a pointer or a handle of kind) is a spilled block. */
int vr_spill_is(int kind, uint64_t key);

/* 1 with the base and size of the spilled linear block that holds dptr
 * (*base, *size, either may be NULL), 0 when none does (nothing written).
 * Walks the whole allocation map: for a driver's failed answer only. */
int vr_spill_range(CUdeviceptr dptr, CUdeviceptr *base, size_t *size);

/* 1 while this process holds spilled blocks (one relaxed load). */
static inline int vr_spill_any(void)
{
	return VR_UNLIKELY(atomic_load_explicit(&vr_spill_live, memory_order_relaxed) != 0);
}

/* Frees what the streams are done with (one relaxed load when nothing is). */
void vr__spill_drain(void);
static inline void vr_spill_drain(void)
{
	if (VR_UNLIKELY(atomic_load_explicit(&vr_spill_ready, memory_order_relaxed)))
		vr__spill_drain();
}

#endif /* VRAMCTL_HOOK_SPILL_H */
