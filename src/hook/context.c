/*
 * context.c - contexts: their limits (what the card holds for them is
 * taken again at once: card.h), and their teardown. A context's creation
 * is not hooked (every program's start-up goes through it, through any
 * copy of the driver): what it holds is taken at the device's first
 * allocation or memory query, before anything is granted on it. Destroying a context
 * (cuCtxDestroy), or the primary context being reset (cuDevicePrimaryCtxReset, the path of
 * cudaDeviceReset) or released for the last time, frees the linear memory
 * and arrays it owns in the driver; the books give them back at that moment
 * (ptrmap.c records each one's context). Stream-ordered pools follow what
 * they physically hold at their next settle (pools.c); VMM handles and
 * graph memory outlive a context and stay counted. Pinned host memory from
 * cuMemAllocHost goes with its context too (NVIDIA's cuCtxDestroy
 * reference): the process's pinned figure drops. cuMemHostAlloc's (spill's
 * included) is not said to and stays counted until freed
 * (docs/fail-closed.md, "Context teardown").
 */
#define VR_CUDA_PROTOTYPES
#include "hook/card.h"
#include "hook/devices.h"
#include "hook/policy.h"
#include "hook/ptrmap.h"

#define OWNED_KINDS                                                                                \
	((1u << VR_KIND_LINEAR) | (1u << VR_KIND_ARRAY) | (1u << VR_KIND_MIPMAP) |                 \
	 (1u << VR_KIND_HOST))

/* After the driver has freed what ctx owned: release it from the books. */
static void forget_context(CUcontext ctx)
{
	uint64_t bytes[VR_MAX_DEVICES] = {0}, host = 0;
	int n = vr_dev_count();
	if (!ctx || !vr_map_take_owned((uint64_t)(uintptr_t)ctx, OWNED_KINDS, bytes, n, &host))
		return;
	for (int i = 0; i < n; i++)
		if (bytes[i])
			vr_policy_release(vr_dev_by_ordinal(i), bytes[i]);
	if (host)
		vr_books_pinned(-(int64_t)host);
}

/* dev's primary context if it is active (taking and giving back one
 * reference, which creates nothing), or NULL. */
static CUcontext active_primary(CUdevice dev)
{
	unsigned flags;
	int active = 0;
	CUcontext c = NULL;
	if (!vr_real.cuDevicePrimaryCtxGetState || !vr_real.cuDevicePrimaryCtxRetain ||
	    !vr_real.cuDevicePrimaryCtxRelease_v2)
		return NULL;
	VR_OWN(if (vr_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS &&
	           active && vr_real.cuDevicePrimaryCtxRetain(&c, dev) == CUDA_SUCCESS)
	           vr_real.cuDevicePrimaryCtxRelease_v2(dev));
	return c;
}

static int primary_active(CUdevice dev)
{
	unsigned flags;
	int active = 1;
	if (vr_real.cuDevicePrimaryCtxGetState &&
	    vr_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS)
		active = 1; /* cannot tell: keep counting */
	return active;
}

#define VR_CTX_DESTROY(name)                                                                       \
	VR_EXPORT CUresult name(CUcontext ctx)                                                     \
	{                                                                                          \
		VR_PASS(name, (ctx));                                                              \
		CUresult rc;                                                                       \
		VR_OWN(rc = vr_real.name(ctx));                                                    \
		if (rc == CUDA_SUCCESS)                                                            \
			forget_context(ctx);                                                       \
		return rc;                                                                         \
	}
VR_CTX_DESTROY(cuCtxDestroy)
VR_CTX_DESTROY(cuCtxDestroy_v2)

/*
 * The primary context's teardown: a reset frees everything it holds at once
 * (freed_if: always); a release frees only when it was the last reference
 * (freed_if: the context is no longer active).
 */
#define VR_PRIMARY_TEARDOWN(name, freed_if)                                                        \
	VR_EXPORT CUresult name(CUdevice dev)                                                      \
	{                                                                                          \
		VR_PASS(name, (dev));                                                              \
		CUcontext c = active_primary(dev);                                                 \
		CUresult rc;                                                                       \
		VR_OWN(rc = vr_real.name(dev));                                                    \
		if (rc == CUDA_SUCCESS && (freed_if))                                              \
			forget_context(c);                                                         \
		return rc;                                                                         \
	}
VR_PRIMARY_TEARDOWN(cuDevicePrimaryCtxReset, 1)
VR_PRIMARY_TEARDOWN(cuDevicePrimaryCtxReset_v2, 1)
VR_PRIMARY_TEARDOWN(cuDevicePrimaryCtxRelease, !primary_active(dev))
VR_PRIMARY_TEARDOWN(cuDevicePrimaryCtxRelease_v2, !primary_active(dev))

/* ---- creation and limits: what the card holds for the process changes */

/* The card's figures of device handle dev taken again after a context of
 * it was made or changed (card.h). */
static void card_changed(CUdevice dev)
{
	struct vr_dev *d;
	if (vr_dev_for_handle(dev, &d) == CUDA_SUCCESS)
		vr_card_event(d);
}

/* A larger stack, heap or printf FIFO takes more of the card at once
 * (CU_LIMIT_STACK_SIZE is per resident thread): counted, and a group it
 * puts over its cap is said (card.c). */
VR_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	VR_PASS(cuCtxSetLimit, (limit, value));
	CUresult rc;
	CUdevice dev;
	VR_OWN(rc = vr_real.cuCtxSetLimit(limit, value));
	if (rc == CUDA_SUCCESS && vr_real.cuCtxGetDevice &&
	    vr_real.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
		card_changed(dev);
	return rc;
}
