/*
 * record.h - what this member hands to `vramctl run --report/--trace`
 * (record.c; the file's layout: common/record.h; design: docs/report.md).
 * The policy, the books and the wrappers call these hooks; with neither
 * flag each is one relaxed load of a NULL pointer and a branch.
 */
#ifndef VRAMCTL_HOOK_RECORD_H
#define VRAMCTL_HOOK_RECORD_H

#include "common/record.h"
#include "hook/dev.h"
#include "hook/hook.h"

/* This member's record file, or NULL (nothing asked for). */
extern struct vr_rec_hdr *_Atomic vr_rec;
/* In the constructor: primes backtrace() when stacks are asked for. */
void vr_rec_prime(void);
/* When the process joins its books: makes its record file. */
void vr_rec_open(void);
/* When a device joins the books. */
void vr_rec_device(const struct vr_dev *d);
void vr__rec_charge(const struct vr_dev *d, int64_t delta);
/* Why a request was refused (vr_rec_denied). */
enum vr_rec_cause {
	VR_DENY_CAP,       /* the cap (a larger one would grant it) */
	VR_DENY_GUARANTEE, /* other groups' guarantees (guarantee.h) */
};
void vr__rec_denied(const struct vr_dev *d, uint64_t bytes, uint64_t group_in_use,
                    enum vr_rec_cause why);
void vr__rec_context_refused(const struct vr_dev *d, uint64_t cost, uint64_t card);
void vr__rec_spilled(const struct vr_dev *d, int64_t delta);
void vr__rec_pinned(int64_t delta);
void vr__rec_freed(int ordinal);
uint16_t vr__rec_alloc(const struct vr_dev *d, uint64_t bytes);
void vr__rec_overhead(const struct vr_dev *d, uint64_t overhead, uint64_t card);
void vr__rec_wait(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int granted);
void vr__rec_park(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int parked);

#define VR_REC_ON() VR_UNLIKELY(atomic_load_explicit(&vr_rec, memory_order_relaxed) != NULL)
/* The books moved by delta on d (reserve > 0, release < 0). */
static inline void vr_rec_charge(const struct vr_dev *d, int64_t delta)
{
	if (VR_REC_ON())
		vr__rec_charge(d, delta);
}
/* A refusal of bytes while the group held group_in_use (the request not
 * counted), for why. */
static inline void vr_rec_denied(const struct vr_dev *d, uint64_t bytes, uint64_t group_in_use,
                                 enum vr_rec_cause why)
{
	if (VR_REC_ON())
		vr__rec_denied(d, bytes, group_in_use, why);
}
/* A new context of cost bytes refused at the cap (card.h), with which the
 * group would have held card on the card: a refusal, never memory held. */
static inline void vr_rec_context_refused(const struct vr_dev *d, uint64_t cost, uint64_t card)
{
	if (VR_REC_ON())
		vr__rec_context_refused(d, cost, card);
}
/* For the spill engine, once per block: bytes served from host memory (+),
 * counted as an allocation, or returned (-), counted as a free. */
static inline void vr_rec_spilled(const struct vr_dev *d, int64_t delta)
{
	if (VR_REC_ON())
		vr__rec_spilled(d, delta);
}
static inline void vr_rec_pinned(int64_t delta)
{
	if (VR_REC_ON())
		vr__rec_pinned(delta);
}
/* A successful free of counted device memory. */
static inline void vr_rec_freed(int ordinal)
{
	if (VR_REC_ON())
		vr__rec_freed(ordinal);
}
/* A successful allocation: counted, and its call site (+1, 0 none) with --stacks. */
static inline uint16_t vr_rec_alloc(const struct vr_dev *d, uint64_t bytes)
{
	return VR_REC_ON() ? vr__rec_alloc(d, bytes) : 0;
}

/* This process's overhead on d (card.h: what the card holds for it beyond
 * its blocks) is now `overhead`, and all it holds there on the card (its
 * blocks as charged, plus the overhead) `card`: for the report's peak on
 * the card and overhead per device. */
static inline void vr_rec_overhead(const struct vr_dev *d, uint64_t overhead, uint64_t card)
{
	if (VR_REC_ON())
		vr__rec_overhead(d, overhead, card);
}

/* A wait for room of bytes on d ended after ns: granted or not. */
static inline void vr_rec_wait(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int granted)
{
	if (VR_REC_ON())
		vr__rec_wait(d, bytes, ns, granted);
}
/* bytes of d were parked (parked 1) or brought back (0), in ns. */
static inline void vr_rec_park(const struct vr_dev *d, uint64_t bytes, uint64_t ns, int parked)
{
	if (VR_REC_ON())
		vr__rec_park(d, bytes, ns, parked);
}

#endif /* VRAMCTL_HOOK_RECORD_H */
