/*
 * card.h - what the card holds (card.c; docs/architecture.md, "What the
 * card holds"). The cap counts, for each
 * member on each device, the larger of what it allocated and what the
 * driver says the card holds for it (NVML's per-process figure): the
 * difference, its overhead (context, modules, local memory, the pages the
 * driver keeps for blocks of 1 MiB or less, the driver's own use), is
 * charged in the books beside its blocks, never refused (the card holds it
 * already).
 *
 * When the figures are taken (the allocation fast path never asks NVML):
 *   - near the cap: a grant that takes the group's books past the watch
 *     line (the cap less its margin, vr_card_margin) is checked before the
 *     driver is called, with figures as new as this process's last change
 *     (a grant near the cap, anything its books show since: not by age),
 *     and, for other members' overhead not charged yet (their "extra":
 *     NVML's figure for them over their books), at most CARD_FRESH_MS old.
 *     A figure is taken when NVML agrees with the driver (its free memory
 *     is cuMemGetInfo's: NVML may lag the card), waiting a bounded time;
 *     one that never agrees is used as it is, said once. A grant that
 *     would put the card's figure past the cap is refused; one of 1 MiB
 *     or less may take a new page, so while one is with the driver, every
 *     other grant of the process counts a page for it: over any sequence
 *     the card holds at most one page per process more than the cap;
 *   - far from it: when the books have grown by half the margin since the
 *     last look;
 *   - before a refusal and on a memory query, when this process's books
 *     moved since the last look or it is CARD_FRESH_MS old (a program that
 *     asks again and again does not ask NVML each time); after its limits
 *     change (cuCtxSetLimit);
 *   - when a context is created: a context that would take the group past
 *     its cap is refused (CUDA_ERROR_OUT_OF_MEMORY) and said; with a spill
 *     budget it stays, said (spill is "slower, not dead"), and what the
 *     program allocates past the cap goes to host memory.
 * Where NVML cannot tell this process's use (no NVML, no per-process
 * figure, the process not listed while it holds memory), one line says so
 * and the cap counts allocations only, as with VRAMCTL_COUNT=allocations.
 */
#ifndef VRAMCTL_HOOK_CARD_H
#define VRAMCTL_HOOK_CARD_H

#include "common/compiler.h"
#include "hook/dev.h"

/* The card's page: linear blocks over 1 MiB take whole ones, smaller
 * blocks are carved from pages the driver keeps for the process (driver
 * 580 on an H200: bench/gpu/driver_facts, docs/real-gpu.md). */
#define VR_PAGE ((uint64_t)2 << 20)

/* The margin below the cap inside which every grant is checked: an
 * eighth of the cap, at least 256 MiB (never more than the cap). */
uint64_t vr_card_margin(uint64_t cap);

/* Once per device, after its cap is known (policy.c). */
void vr_card_setup(struct vr_dev *d);
/* d's cap changed (`vramctl limit`): the next grant takes fresh figures
 * (its watch line was drawn from the old cap). */
void vr_card_cap_changed(struct vr_dev *d);

/* A grant of bytes that took the books' total to `total`, past d's watch
 * line, before the driver is asked for it: 0 it stands, -1 the card's
 * figure would pass the cap (the caller gives the bytes back and refuses).
 * A grant of 1 MiB or less that stands is with the driver until the
 * calling thread says vr_card_landed. */
int vr_card_grant(struct vr_dev *d, uint64_t bytes, uint64_t total);

/* d->card.flags: STALE, a change since the last look that NVML's figures
 * may not show (nor the driver's free memory tell); NEAR, the group's books
 * were past the cap less its margin at the last grant checked. */
enum { VR_CARD_STALE = 1u, VR_CARD_NEAR = 2u };

/* A linear block of `bytes` (as charged) was freed on d, its bytes given
 * back: near the cap, the card's figure follows it without asking NVML
 * (a block of 1 MiB or less leaves its page on the card; a larger one
 * takes its pages with it). One relaxed load on every linear free. */
void vr__card_freed(struct vr_dev *d, uint64_t bytes);
static inline void vr_card_freed(struct vr_dev *d, uint64_t bytes)
{
	if (VR_UNLIKELY(atomic_load_explicit(&d->card.flags, memory_order_relaxed) & VR_CARD_NEAR))
		vr__card_freed(d, bytes);
}

/* The driver answered the calling thread's last allocation (granted or
 * not), or it was refused after all: a grant of 1 MiB or less near the cap
 * is no longer in flight. One thread-local load on every allocation. */
extern __thread struct vr_dev *vr__card_flight __attribute__((tls_model("initial-exec")));
void vr__card_landed(void);
static inline void vr_card_landed(void)
{
	if (VR_UNLIKELY(vr__card_flight != NULL))
		vr__card_landed();
}

/* Before a refusal: the figures taken again when this process's books
 * moved since the last look, or it is CARD_FRESH_MS old; 1 when this
 * process's overhead went down (the request is worth trying once more). */
int vr_card_before_refusal(struct vr_dev *d);

/* The group's use of d on the card, for memory queries and denials: its
 * books plus the overhead other members hold and have not charged yet,
 * with the figures taken again as before a refusal; the group's overhead (charged
 * and not) into *overhead when not NULL. Where the cap counts allocations
 * only: the books, overhead 0. */
uint64_t vr_card_use(struct vr_dev *d, uint64_t *overhead);

/* After a context's limits changed on d. */
void vr_card_event(struct vr_dev *d);

/*
 * A new context of d (context.c). vr_card_listed, before the driver is
 * asked (when d is set up already; else `listed` is 0): NVML's figure for
 * this process on d now (0: not listed, or the card not counted).
 * vr_card_context, once the driver made it: its cost is taken (waiting, at
 * most CARD_WAIT_MS, for NVML to agree with the driver where the new
 * context is current, else to show more than `listed`: NVML may lag the
 * card) and charged; 0 it stands, -1 the group's use on the card would
 * pass the cap with it (said): the caller destroys it, calls
 * vr_card_context_gone with *was, and returns
 * CUDA_ERROR_OUT_OF_MEMORY.
 */
uint64_t vr_card_listed(struct vr_dev *d);
int vr_card_context(struct vr_dev *d, uint64_t listed, uint64_t *was);
void vr_card_context_gone(struct vr_dev *d, uint64_t was);

/* The ordinal of the device whose new context this process was refused
 * last (vr_card_context: counted as a denial, said), or -1: a driver call
 * that then finds no context fails as the consequence of that refusal. */
int vr_card_refused_context(void);

/* Does d's cap count the card (1) or allocations only (0)? */
int vr_card_counts(const struct vr_dev *d);

#endif /* VRAMCTL_HOOK_CARD_H */
