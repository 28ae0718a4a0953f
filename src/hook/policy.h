/*
 * policy.h - "does this fit?" (policy.c): the cap of each device, reserve
 * or deny before the driver is called, and the numbers every memory query
 * shows the program. The wrappers ask here and nowhere else.
 *
 * The reserve path, top to bottom: each name calls only names below it.
 * (i) is inline, on every allocation; the rest are out of line.
 *
 *   asked by the wrappers (this header)
 *     vr_policy_reserve_linear     (i) a linear block, charged in whole pages
 *       vr__policy_reserve_pages       pages over the ask: "all that is left",
 *                                      one short block a device
 *     vr_policy_short_settle           the short block's address, once known
 *     vr_policy_linear_freed       (i) a freed short block: the exception again
 *     vr_policy_reserve_spillable  (i) 0 on the device, 1 the host may serve
 *                                      it (spill), -1 denied
 *       vr__policy_spillable           with a spill budget: a quiet reserve
 *     vr_policy_reserve            (i) reserve, or deny and say so
 *     vr_policy_try                    the same, nothing said (pools)
 *       vr__policy_reserve         (i) the books' reserve + the record's count
 *       vr__policy_take            (i) the books' reserve, then near the cap
 *       vr__policy_granted         (i) does the card agree? and the others'
 *                                      guarantees (guarantee.h)?
 *         vr__policy_card              the card's figure (card.h)
 *       vr__policy_refused             a refusal: the card asked again,
 *                                      then recorded and said
 *     vr_policy_deny                   the denial once spill failed as well
 *     vr_policy_release            (i) gives back any of the above
 *   the books (books.h): where the bytes are held
 *     vr_books_reserve             (i) a refusal counts as a denial
 *     vr_books_reserve_quiet       (i) it does not (vr_books_denied may)
 *       vr__books_reserve          (i) the group's registry, when joined
 *       vr__books_reserve_other        a refused registry reserve, or this
 *                                      process's own books
 *     vr_books_spill / _unspill        spill's host budget
 *   the registry (registry/registry.h): vr_reserve, vr_reserve_quiet, the
 *     group's books in shared memory.
 *
 * The other entry points: vr_policy_check_devices and vr_policy_device (a
 * device's cap, once), vr_policy_view and vr_policy_total (what the program
 * is shown).
 */
#ifndef VRAMCTL_HOOK_POLICY_H
#define VRAMCTL_HOOK_POLICY_H

#include "hook/books.h"
#include "hook/card.h"
#include "hook/dev.h"
#include "hook/guarantee.h"
#include "hook/record.h"

/* Checks that every device the cap names is one of this process's (or a
 * GPU of this machine hidden by CUDA_VISIBLE_DEVICES); if one is not, says
 * so once and every device's cap becomes 0 (fail closed). Idempotent; called
 * before the devices lock is taken (it may load NVML). */
void vr_policy_check_devices(void);

/* Called once per device as it is set up (devices.c): the cap asked for it,
 * then the books (the group's cap, if it has one, wins). */
void vr_policy_device(struct vr_dev *d);

/*
 * Reserve before the driver is called, release when it fails or the memory
 * is freed. vr_policy_reserve returns 0, or -1 when the request does not fit
 * (the denial has been reported); vr_policy_try is the same without the
 * report (settling pools). Uncapped devices are counted and never denied.
 * A NULL device reserves and releases nothing.
 */
static inline int vr_policy_reserve(struct vr_dev *d, uint64_t bytes);
int vr_policy_try(struct vr_dev *d, uint64_t bytes);
static inline void vr_policy_release(struct vr_dev *d, uint64_t bytes);

/*
 * For an allocation that may spill past the cap (spill.h, docs/spill.md):
 * 0 reserved on the device; 1 the device is at its cap and spill is on:
 * nothing reserved, nothing said, the caller serves it from the host; -1
 * denied (said). The device is always tried first, so allocations go to it
 * again as soon as it has room.
 */
static inline __attribute__((always_inline)) int vr_policy_reserve_spillable(struct vr_dev *d,
                                                                             uint64_t bytes);
/* The denial when spill could not serve the request either: counted in the
 * books and said, with why (rate limited like every denial). */
void vr_policy_deny(struct vr_dev *d, uint64_t bytes, const char *why);

/*
 * What the card takes for a linear block (cuMemAlloc, cuMemAllocPitch):
 * over 1 MiB whole pages (VR_PAGE, card.h), smaller blocks their size
 * (driver 580 on an H200: cuMemGetInfo's free and NVML's process list
 * both drop by this; bench/gpu/driver_facts, docs/real-gpu.md). The books
 * count it, so the card's own figure stays under the cap; the pages small
 * blocks are carved from are the card's figure's (card.h).
 */
static inline uint64_t vr_on_card(uint64_t bytes)
{
	return bytes > VR_PAGE / 2 ? (bytes + VR_PAGE - 1) / VR_PAGE * VR_PAGE : bytes;
}

/*
 * The reserve of a linear block of `bytes`: what the card takes
 * (vr_on_card) into *charged, as vr_policy_reserve_spillable (spillable
 * set) or vr_policy_reserve answers. One exception: a request for exactly
 * all that is left, whose pages do not fit (a cap that is not a whole
 * number of pages, such as --limit 10%), is charged as asked, so a program
 * gets all it is shown free. Such a "short" block is one at a time per
 * device (d->short_block): while it lives, the exception is not made again,
 * so over any sequence of requests the card holds less than a page more
 * than the cap (README, "What is counted"; issue #29: frees of small blocks
 * made room for one more short block after another, a page each).
 *
 * When *charged is less than vr_on_card(bytes) the caller holds the short
 * block: it calls vr_policy_short_settle with the block's address once the
 * driver granted it, or with 0 when the driver failed (after the release).
 */
static inline __attribute__((always_inline)) int
vr_policy_reserve_linear(struct vr_dev *d, uint64_t bytes, int spillable, uint64_t *charged);
#define VR_SHORT_PENDING ((uint64_t)1)
/* The short block of d is ptr (0: there is none after all). */
void vr_policy_short_settle(struct vr_dev *d, uint64_t ptr);
/* A linear block of `bytes` recorded at key was freed: if it was d's short
 * block, the exception may be made again (cheap unless bytes is a size a
 * short block can have: over half a page, not whole pages); near the cap
 * the card's figure follows (card.h). */
static inline void vr_policy_linear_freed(struct vr_dev *d, uint64_t key, uint64_t bytes);

/* What the program is shown for a capped device, from the driver's (free,
 * total): total = min(cap, total); free = min(cap - the group's use on the
 * card, free), never below zero, never above total. The group's use on the
 * card is its books (blocks and charged overhead) plus what other members
 * hold on the card and have not charged yet (card.h). */
void vr_policy_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp);
/* The total shown for d, from the driver's physical total. */
uint64_t vr_policy_total(struct vr_dev *d, uint64_t total);

/* ---- the fast paths, inline: every allocation and free goes through them */

/* What follows a reserve the books refused (policy.c): a NULL device is
 * granted (0); else -1, with the denial said when report is set. */
int vr__policy_refused(struct vr_dev *d, uint64_t bytes, uint64_t in_use, int report);
/* vr_policy_reserve_spillable with a spill budget in force (policy.c). */
int vr__policy_spillable(struct vr_dev *d, uint64_t bytes);
/* vr_policy_reserve_linear of a block whose pages are more than it asks
 * (policy.c). */
int vr__policy_reserve_pages(struct vr_dev *d, uint64_t bytes, uint64_t page, int spillable,
                             uint64_t *charged);

/* A grant that took the books' total past d's watch line (card.h), or
 * made after the group's cap changed (the cap is taken again first): 0 it
 * stands, else -1 with the bytes given back and *in_use the card's figure
 * that did not leave room (nothing said). */
int vr__policy_card(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);

/* After the books granted bytes with in_use their total (0: served from a
 * thread's spare, the total unmoved): near the cap, the card is asked. */
static inline __attribute__((always_inline)) int
vr__policy_granted(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	if (VR_UNLIKELY(*in_use > atomic_load_explicit(&d->card.watch, memory_order_relaxed) ||
	                atomic_load_explicit(&vr_caps_taken, memory_order_acquire) !=
	                    atomic_load_explicit(&d->caps_seen, memory_order_relaxed)) &&
	    vr__policy_card(d, bytes, in_use) != 0)
		return -1;
	if (VR_UNLIKELY(vr_gt_check(d, bytes, in_use) != 0)) {
		vr_card_landed(); /* refused after all: never with the driver */
		return -1;
	}
	return 0;
}

/* The books' reserve of bytes (quiet: a refusal is not counted as a
 * denial), then the card's word near the cap: 0 held, nothing recorded
 * yet; -1 with *in_use the figure that did not leave room. */
static inline __attribute__((always_inline)) int vr__policy_take(struct vr_dev *d, uint64_t bytes,
                                                                 uint64_t *in_use, int quiet)
{
	return VR_LIKELY(vr__books_reserve(d, bytes, in_use, quiet) == 0) &&
	               VR_LIKELY(vr__policy_granted(d, bytes, in_use) == 0)
	           ? 0
	           : -1;
}

static inline __attribute__((always_inline)) int vr__policy_reserve(struct vr_dev *d,
                                                                    uint64_t bytes, int report)
{
	uint64_t in_use = 0;
	if (VR_LIKELY(d != NULL) && VR_LIKELY(vr__policy_take(d, bytes, &in_use, 0) == 0)) {
		vr_rec_charge(d, (int64_t)bytes);
		return 0;
	}
	return vr__policy_refused(d, bytes, in_use, report);
}

static inline __attribute__((always_inline)) int vr_policy_reserve(struct vr_dev *d, uint64_t bytes)
{
	return vr__policy_reserve(d, bytes, 1);
}

static inline void vr_policy_release(struct vr_dev *d, uint64_t bytes)
{
	if (VR_LIKELY(d != NULL)) {
		vr_rec_charge(d, -(int64_t)bytes);
		vr_books_release(d, bytes);
	}
}

static inline __attribute__((always_inline)) int vr_policy_reserve_spillable(struct vr_dev *d,
                                                                             uint64_t bytes)
{
	if (VR_LIKELY(!vr_books_spill_budget()))
		return vr_policy_reserve(d, bytes) == 0 ? 0 : -1;
	return vr__policy_spillable(d, bytes);
}

static inline __attribute__((always_inline)) int
vr_policy_reserve_linear(struct vr_dev *d, uint64_t bytes, int spillable, uint64_t *charged)
{
	uint64_t page = vr_on_card(bytes);
	if (VR_LIKELY(page == bytes) || VR_UNLIKELY(d == NULL)) {
		*charged = bytes;
		if (spillable)
			return vr_policy_reserve_spillable(d, bytes);
		return vr_policy_reserve(d, bytes) == 0 ? 0 : -1;
	}
	return vr__policy_reserve_pages(d, bytes, page, spillable, charged);
}

void vr__policy_short_freed(struct vr_dev *d, uint64_t key);

static inline void vr_policy_linear_freed(struct vr_dev *d, uint64_t key, uint64_t bytes)
{
	if (VR_UNLIKELY(vr_on_card(bytes) != bytes))
		vr__policy_short_freed(d, key);
	vr_card_freed(d, bytes);
}

#endif /* VRAMCTL_HOOK_POLICY_H */
