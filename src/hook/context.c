/*
 * context.c - contexts: their creation and limits (what the card holds for
 * them is taken at once, and a new context that would take the group past
 * its cap on the card is refused: card.h), and their teardown. Destroying a context
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
#include <dlfcn.h>

#include "hook/card.h"
#include "hook/dlreal.h"
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
 * it changed (card.h). */
static void card_changed(CUdevice dev)
{
	struct vr_dev *d;
	if (vr_dev_for_handle(dev, &d) == CUDA_SUCCESS)
		vr_card_event(d);
}

/* A context about to be made on handle dev (armed: the card is counted)
 * and NVML's figure for this process before (card.h), known when the
 * device is set up already; the device itself is looked up once the
 * driver made the context (so a look-up that fails is never said of a
 * call that goes on). */
struct made {
	CUdevice dev;
	int armed;
	struct vr_dev *d;
	uint64_t listed, was;
};

static void before_made(CUdevice dev, struct made *m)
{
	struct vr_dev *d = vr_dev_ready(dev);
	*m = (struct made){.dev = dev, .armed = !vr_g.count_allocations};
	if (m->armed && d)
		m->listed = vr_card_listed(d);
}

/* 1 when the new context would take the group past its cap on the card:
 * the caller destroys it, then calls made_undone. ctx: the new context
 * when it is not current (a primary one), current for the check, so that
 * the driver can be asked about its device (card.h). */
static int refused_made(struct made *m, CUcontext ctx)
{
	if (!m->armed || vr_dev_for_handle(m->dev, &m->d) != CUDA_SUCCESS)
		return 0;
	CUcontext was = NULL;
	int pushed = 0;
	if (ctx && vr_real.cuCtxPushCurrent_v2 && vr_real.cuCtxPopCurrent_v2)
		VR_OWN(pushed = vr_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS);
	int refused = vr_card_context(m->d, m->listed, &m->was) != 0;
	if (pushed)
		VR_OWN(vr_real.cuCtxPopCurrent_v2(&was));
	return refused;
}

static CUresult made_undone(struct made *m, CUcontext *pctx)
{
	vr_card_context_gone(m->d, m->was);
	if (pctx)
		*pctx = NULL;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The program's own driver's entry point `name` (the libcuda.so.1 it
 * loaded first), or NULL. */
static void *own_entry(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *p = h ? vr_dlsym_real(h, name) : NULL;
	if (h)
		dlclose(h);
	return p;
}

/*
 * A context is not memory the cap refuses by itself: where vramctl's
 * driver is not the program's (VRAMCTL_DRIVER names a copy the program did
 * not start, or cannot be loaded), the program's own entry point makes it,
 * so that its start-up still works; what it allocates is refused all the
 * same (fail closed: devices.c, real.c say why).
 */
#define OWN_ENTRY(rc, name, args)                                                                  \
	do {                                                                                       \
		__typeof__(vr_real.name) own_;                                                     \
		*(void **)&own_ = own_entry(#name);                                                \
		(rc) = own_ && own_ != vr_real.name ? own_ args : (rc);                            \
	} while (0)
/* vramctl's copy of the driver was not started by the program: the
 * program's own makes the context, which vramctl's cannot count. */
#define OTHER_COPY(rc, name, args)                                                                 \
	do {                                                                                       \
		if ((rc) == CUDA_ERROR_NOT_INITIALIZED && vr_g.driver_path[0]) {                   \
			OWN_ENTRY(rc, name, args);                                                 \
			return rc;                                                                 \
		}                                                                                  \
	} while (0)
/* VR_PASS, but a driver that cannot be loaded hands the call to the
 * program's own entry point. */
#define VR_PASS_MADE(name, args)                                                                   \
	int vr__act = vr_enter();                                                                  \
	if (VR_UNLIKELY(vr__act < 0 || !vr_real.name)) {                                           \
		CUresult rc_ = vr__refusal(); /* out of memory: stays parked */                    \
		if (rc_ == CUDA_ERROR_NOT_INITIALIZED)                                             \
			OWN_ENTRY(rc_, name, args);                                                \
		return rc_;                                                                        \
	}                                                                                          \
	if (!vr__act)                                                                              \
	return vr_real.name args

/* The primary context: made by the first retain only (the runtime's
 * start-up: cudart, so PyTorch, TensorFlow, JAX). */
VR_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	VR_PASS_MADE(cuDevicePrimaryCtxRetain, (pctx, dev));
	unsigned flags;
	int active = 1;
	struct made m = {0};
	CUresult rc;
	/* m.armed stays 0 for a retain of a context that is active already. */
	if (vr_real.cuDevicePrimaryCtxGetState)
		VR_OWN(if (vr_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS)
		           active = 1);
	if (!active)
		before_made(dev, &m);
	VR_OWN(rc = vr_real.cuDevicePrimaryCtxRetain(pctx, dev));
	OTHER_COPY(rc, cuDevicePrimaryCtxRetain, (pctx, dev));
	if (rc == CUDA_SUCCESS && refused_made(&m, *pctx)) {
		if (vr_real.cuDevicePrimaryCtxRelease_v2)
			VR_OWN(vr_real.cuDevicePrimaryCtxRelease_v2(dev));
		return made_undone(&m, pctx);
	}
	return rc;
}

/* cuCtxCreate's forms: a new context each time. */
#define VR_CTX_CREATE(name, params, args)                                                          \
	VR_EXPORT CUresult name params                                                             \
	{                                                                                          \
		VR_PASS_MADE(name, args);                                                          \
		struct made m;                                                                     \
		CUresult rc;                                                                       \
		before_made(dev, &m);                                                              \
		VR_OWN(rc = vr_real.name args);                                                    \
		OTHER_COPY(rc, name, args);                                                        \
		if (rc == CUDA_SUCCESS && refused_made(&m, NULL)) {                                \
			if (vr_real.cuCtxDestroy_v2)                                               \
				VR_OWN(vr_real.cuCtxDestroy_v2(*pctx));                            \
			return made_undone(&m, pctx);                                              \
		}                                                                                  \
		return rc;                                                                         \
	}
VR_CTX_CREATE(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))
VR_CTX_CREATE(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev),
              (pctx, flags, dev))
VR_CTX_CREATE(cuCtxCreate_v3,
              (CUcontext * pctx, CUexecAffinityParam *paramsArray, int numParams,
               unsigned int flags, CUdevice dev),
              (pctx, paramsArray, numParams, flags, dev))
VR_CTX_CREATE(cuCtxCreate_v4,
              (CUcontext * pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev),
              (pctx, params, flags, dev))

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
