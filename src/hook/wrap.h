/*
 * wrap.h - the pattern of every wrapper that creates or frees device memory
 * one allocation at a time (alloc.c, array.c, graph.c): reserve in the
 * books, call the driver, record the allocation; if the driver fails,
 * release and return its code unchanged. A free takes the record out first
 * (so a concurrent allocation that gets the same address back is never
 * confused with it), calls the driver, and puts the record back if the
 * driver refused. Unknown keys (imports, memory allocated before a cap
 * applied, another library's) pass untouched. Inline: the allocation and
 * free paths of every program.
 */
#ifndef VRAMCTL_HOOK_WRAP_H
#define VRAMCTL_HOOK_WRAP_H

#include "hook/books.h"
#include "hook/devices.h"
#include "hook/drvlimit.h"
#include "hook/hook.h"
#include "hook/park.h"
#include "hook/policy.h"
#include "hook/ptrmap.h"
#include "hook/record.h"

/* The driver refused an allocation charged at bytes on d: the charge goes
 * back (wrap.c); returns the driver's code rc. */
CUresult vr_wrap_refused(struct vr_dev *d, uint64_t bytes, CUresult rc) __attribute__((cold));

static inline uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

/* The device of the current context into d, or return the error of the
 * look-up that failed: an allocation is refused, never made uncounted. */
#define VR_CURRENT_DEVICE(d)                                                                       \
	struct vr_dev *d;                                                                          \
	do {                                                                                       \
		CUresult vr__dev_rc = vr_dev_for_alloc(&d);                                        \
		if (vr__dev_rc != CUDA_SUCCESS)                                                    \
			return vr__dev_rc;                                                         \
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
	vr_card_landed(); /* the driver answered (card.h) */
	if (VR_UNLIKELY(!atomic_load_explicit(&d->first_block, memory_order_relaxed)))
		atomic_store_explicit(&d->first_block, bytes, memory_order_relaxed);
	if (VR_LIKELY(vr_map_put_owned(kind, key, d->ordinal, bytes, owner_of(kind),
	                               vr_rec_alloc(d, bytes)) == 0)) {
		/* On the card and known to the free (which uncounts it). */
		vr_gt_placed(d, bytes);
	} else {
		vr_policy_release(d, bytes);
		vr_log(VR_LOG_WARN,
		       "out of memory for the allocation map; an allocation of "
		       "GPU %d goes uncounted",
		       d->ordinal);
	}
}

/* The driver's call for an allocation a grant went before: once it has
 * answered (placed the block or failed), what a borrow put on the board of
 * borrows in flight ends (guarantee.h). */
#define VR_DRIVER(stmt)                                                                            \
	do {                                                                                       \
		VR_OWN(stmt);                                                                      \
		vr_gt_answered();                                                                  \
	} while (0)

/* Calls the driver for an allocation already charged at bytes on d; if it
 * fails, releases the charge and returns the driver's code. Out of memory
 * on a card whose guarantees lend to idle programs: they are parked for
 * room and the driver asked once more. */
#define VR_CALL(d, bytes, call)                                                                    \
	do {                                                                                       \
		CUresult vr__rc;                                                                   \
		VR_DRIVER(vr__rc = call);                                                          \
		if (VR_UNLIKELY(vr__rc != CUDA_SUCCESS)) {                                         \
			if (vr__rc != CUDA_ERROR_OUT_OF_MEMORY || !vr_park_for_room(d, bytes))     \
				return vr_wrap_refused(d, bytes, vr__rc);                          \
			VR_DRIVER(vr__rc = call);                                                  \
			if (vr__rc != CUDA_SUCCESS)                                                \
				return vr_wrap_refused(d, bytes, vr__rc);                          \
		}                                                                                  \
	} while (0)

/* The same, then records the allocation under key (read only after a
 * successful call). */
#define VR_CALL_SETTLE(d, kind, bytes, call, key)                                                  \
	do {                                                                                       \
		VR_CALL(d, bytes, call);                                                           \
		record(d, kind, key, bytes);                                                       \
		return CUDA_SUCCESS;                                                               \
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
		int vr__r = vr_policy_reserve_spillable(d, bytes);                                 \
		if (vr__r > 0)                                                                     \
			return spill;                                                              \
		if (vr__r < 0)                                                                     \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		VR_CALL_SETTLE(d, kind, bytes, call, key);                                         \
	} while (0)

/* After the driver's answer to a free of a known record (d: its device,
 * NULL for pinned host memory): the bytes go back (pinned host memory to
 * its own count), or the record is put back if the driver refused.
 * Returns rc. */
static inline __attribute__((always_inline)) CUresult settle_free(int kind, uint64_t key,
                                                                  struct vr_dev *d, int dev,
                                                                  uint64_t bytes, uint16_t site,
                                                                  CUresult rc)
{
	if (rc != CUDA_SUCCESS) {
		if (d)
			vr_gt_placed(d, bytes); /* still on the card */
		vr_map_put(kind, key, dev, bytes, site);
	} else if (kind == VR_KIND_HOST) {
		vr_books_pinned(-(int64_t)bytes);
	} else if (d) {
		vr_policy_release(d, bytes);
		vr_rec_freed(dev);
		if (kind == VR_KIND_LINEAR)
			vr_policy_linear_freed(d, key, bytes);
	}
	return rc;
}

/* Before a free of a known block: it stops counting against the group's
 * guarantee (guarantee.h); the device, for a free the driver refuses. */
static inline __attribute__((always_inline)) struct vr_dev *gt_leaving(int kind, int dev,
                                                                       uint64_t bytes)
{
	struct vr_dev *d = kind == VR_KIND_HOST ? NULL : vr_dev_by_ordinal(dev);
	if (d)
		vr_gt_leaving(d, bytes);
	return d;
}

/* A free: take the record, call the driver, settle. */
#define VR_FREE(kind, key, call)                                                                   \
	do {                                                                                       \
		int vr__dev;                                                                       \
		uint64_t vr__bytes;                                                                \
		uint16_t vr__site = 0;                                                             \
		int vr__known = vr_map_take(kind, key, &vr__dev, &vr__bytes, &vr__site);           \
		struct vr_dev *vr__d = vr__known ? gt_leaving(kind, vr__dev, vr__bytes) : NULL;    \
		CUresult vr__rc;                                                                   \
		VR_OWN(vr__rc = call);                                                             \
		return vr__known                                                                   \
		           ? settle_free(kind, key, vr__d, vr__dev, vr__bytes, vr__site, vr__rc)   \
		           : vr__rc;                                                               \
	} while (0)

#endif /* VRAMCTL_HOOK_WRAP_H */
