/*
 * devices.h - the look-ups of the program's devices as it numbers them
 * (after CUDA_VISIBLE_DEVICES): each device is set up the first time it is
 * allocated on or asked about, its cap then set by the policy (devices.c).
 */
#ifndef VRAMCTL_HOOK_DEVICES_H
#define VRAMCTL_HOOK_DEVICES_H

#include "hook/dev.h"
#include "hook/hook.h"

/*
 * For an allocation: the device of the current context (vr_dev_for_alloc)
 * or with this handle (vr_dev_for_handle). Returns CUDA_SUCCESS with *out,
 * or the error of the look-up that failed (cuCtxGetDevice's, cuDeviceGetCount's;
 * CUDA_ERROR_INVALID_DEVICE for a handle that is no device) with *out NULL:
 * the allocation is then refused with that code, never made uncounted.
 */
static inline CUresult vr_dev_for_alloc(struct vr_dev **out);
static inline CUresult vr_dev_for_handle(CUdevice h, struct vr_dev **out);
/* The device with this program ordinal, or NULL. */
static inline struct vr_dev *vr_dev_by_ordinal(int ordinal);
/* The device with this "GPU-..." UUID text into *out (NULL: not one of the
 * program's devices). Returns CUDA_SUCCESS, or the error of the look-up
 * that failed (then nobody can tell). */
CUresult vr_dev_for_uuid_text(const char *uuid, struct vr_dev **out);
/* Devices enumerated so far (0 before the program's cuInit). */
int vr_dev_count(void);
/* Says that the look-up `call` failed with rc, so the call that needed it
 * is refused with that error (fail closed): one line, rate limited with the
 * denials (such a refusal is never silent). */
void vr_dev_say_failed(const char *call, CUresult rc);

/* ---- the look-ups of every allocation and free, inline */

/* The devices, filled in by devices.c; [0, vr__ndev) enumerated. */
extern struct vr_dev vr__devs[VR_MAX_DEVICES];
extern atomic_int vr__ndev;
/* The first look-up of a device, or one whose handle is not its ordinal. */
CUresult vr__dev_for_handle(CUdevice h, struct vr_dev **out);
struct vr_dev *vr__dev_by_ordinal(int ordinal);

/* The device with handle h if it is set up already, else NULL (nothing
 * asked of the driver, nothing said). */
static inline struct vr_dev *vr_dev_ready(CUdevice h)
{
	int n = atomic_load_explicit(&vr__ndev, memory_order_acquire);
	/* Every driver seen so far hands out ordinals as handles. */
	if (VR_LIKELY(h >= 0 && h < n && vr__devs[h].handle == h &&
	              atomic_load_explicit(&vr__devs[h].ready, memory_order_acquire)))
		return &vr__devs[h];
	return NULL;
}

static inline CUresult vr_dev_for_handle(CUdevice h, struct vr_dev **out)
{
	*out = vr_dev_ready(h);
	if (VR_LIKELY(*out != NULL))
		return CUDA_SUCCESS;
	return vr__dev_for_handle(h, out);
}

static inline CUresult vr_dev_for_alloc(struct vr_dev **out)
{
	CUdevice h;
	*out = NULL;
	if (VR_UNLIKELY(!vr_real.cuCtxGetDevice))
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult rc = vr_real.cuCtxGetDevice(&h);
	if (VR_UNLIKELY(rc != CUDA_SUCCESS)) {
		vr_dev_say_failed("cuCtxGetDevice", rc);
		return rc;
	}
	return vr_dev_for_handle(h, out);
}

static inline struct vr_dev *vr_dev_by_ordinal(int ordinal)
{
	int n = atomic_load_explicit(&vr__ndev, memory_order_acquire);
	if (VR_LIKELY(ordinal >= 0 && ordinal < n &&
	              atomic_load_explicit(&vr__devs[ordinal].ready, memory_order_acquire)))
		return &vr__devs[ordinal];
	return vr__dev_by_ordinal(ordinal);
}

#endif /* VRAMCTL_HOOK_DEVICES_H */
