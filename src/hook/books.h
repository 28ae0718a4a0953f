/*
 * books.h - where the bytes are held (books.c): the group's shared registry
 * or, when it cannot be joined, this process's own books. Mechanism only:
 * what may be reserved is the policy's call (policy.h).
 */
#ifndef VRAMCTL_HOOK_BOOKS_H
#define VRAMCTL_HOOK_BOOKS_H

#include "hook/dev.h"
#include "hook/hook.h"
#include "hook/outer.h"
#include "registry/registry.h"

/* This process's membership (NULL: none) and the spill budget in force:
 * read by the inline fast paths below, written by books.c. */
extern vr_member *vr__books_member;
extern _Atomic uint64_t vr__books_spill_budget;
/* The same for a thread that may run while the join publishes it (the
 * park agent): an acquire load, paired with books.c's release. */
static inline vr_member *vr_books_member_now(void)
{
	return __atomic_load_n(&vr__books_member, __ATOMIC_ACQUIRE);
}

/* Adds d to the books with cap_if_new (the group's cap wins if the group
 * already has one): fills d->reg and d->cap. Joins first if needed. */
void vr_books_device(struct vr_dev *d, uint64_t cap_if_new);
/* Adds bytes to d's in-use if it stays within d->cap (the group's cap on the
 * registry). Returns 0, or -1 with *in_use the figure that did not leave room
 * (a registry that fails also refuses: the cap is never passed). */
static inline int vr_books_reserve(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);
/* The same without counting a refusal as a denial in the group's books (the
 * request may still be served another way: spill); vr_books_denied counts one. */
static inline int vr_books_reserve_quiet(struct vr_dev *d, uint64_t bytes, uint64_t *in_use);
void vr_books_denied(struct vr_dev *d, uint64_t bytes);
static inline void vr_books_release(struct vr_dev *d, uint64_t bytes);
/* The rest of a reserve the registry did not grant (rc), or of one in this
 * process's own books. */
int vr__books_reserve_other(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int rc, int quiet);
/* Per-process books: what they hold now on d (in_use), for monitors
 * (registry/own.h), when d's are published. */
void vr__books_own_note(struct vr_dev *d, uint64_t in_use);

/* Publishes d's per-process books, when d keeps them under a cap (its
 * group could not be joined, or not for d): monitors then show it capped,
 * alone, and why. Called once d is set up (policy.c). */
void vr_books_own(struct vr_dev *d);
/* d->cap follows the group's cap, which `vramctl limit` may have changed
 * (said once per change): 1 when it did. Not on the allocation path:
 * memory queries and refusals call it (policy.c). */
int vr_books_cap_sync(struct vr_dev *d);
/* The cap d had before `vramctl limit` last lowered it, or 0 (not
 * lowered since this process took it, or raised since). */
uint64_t vr_books_cap_lowered(const struct vr_dev *d);
/* 1 when `vramctl limit` changed the group's caps since it started: its
 * spec now into spec (a device used from now on takes its cap from it). */
int vr_books_changed_spec(char *spec, size_t len);
/* The group this process joined: its name ("" before the join or without
 * one) and its books' key (registry.h, vr_group_key; 0: none). */
const char *vr_books_group(void);
uint64_t vr_books_group_key(void);
/* Group-wide in-use of d. */
uint64_t vr_books_in_use(struct vr_dev *d);
/* For the denial line: this process's in-use on d, the group's peak, and the
 * n largest other members (largest first). Returns how many were filled. */
int vr_books_holders(const struct vr_dev *d, uint64_t *self, uint64_t *peak, struct vr_holder *out,
                     int n);
/* What this process holds on d, overhead included (card.c). */
uint64_t vr_books_held(struct vr_dev *d);
/* Makes this process's overhead charge on d `bytes` (never refused at the
 * cap: registry.h, vr_overhead_set); d->card.overhead follows. */
void vr_books_overhead(struct vr_dev *d, uint64_t bytes);
/* The group's other members on d (none with this process's own books):
 * registry.h, vr_member_uses. */
int vr_books_others(struct vr_dev *d, struct vr_member_use *out, int n);
/* Marks this process's slot: its cap counts allocations only (bits of
 * VR_SLOT_F_ALLOCATIONS / VR_SLOT_F_NO_FIGURES). */
void vr_books_counting(unsigned bits);
/* Pinned host memory: counted apart, never capped. */
void vr_books_pinned(int64_t delta);
/*
 * Spill's host budget (docs/spill.md): the group's once joined (it applies
 * to every member, as the cap does), else VRAMCTL_SPILL's. vr_books_spill
 * returns 0, or -1 when bytes more would pass it; *spilled and *budget get
 * the numbers either way.
 */
static inline uint64_t vr_books_spill_budget(void)
{
	return atomic_load_explicit(&vr__books_spill_budget, memory_order_relaxed);
}
int vr_books_spill(struct vr_dev *d, uint64_t bytes, uint64_t *spilled, uint64_t *budget);
void vr_books_unspill(struct vr_dev *d, uint64_t bytes);

/* ---- the fast paths, inline: every allocation and free goes through them */

/* The outer groups' part of a reserve its own group granted (outer.h);
 * refused there, its own group's is given back. */
int vr__books_reserve_outer(struct vr_dev *d, uint64_t bytes, uint64_t *in_use, int quiet);

static inline __attribute__((always_inline)) int vr__books_reserve(struct vr_dev *d, uint64_t bytes,
                                                                   uint64_t *in_use, int quiet)
{
	vr_peak_note_start(); /* what it raises, taken back if refused after all */
	int rc = d->reg < 0 ? 0
	         : quiet    ? vr_reserve_quiet(vr__books_member, d->reg, bytes, in_use)
	                    : vr_reserve(vr__books_member, d->reg, bytes, in_use);
	if (VR_LIKELY(rc == 0 && d->reg >= 0))
		return VR_LIKELY(!d->nouter) ? 0 : vr__books_reserve_outer(d, bytes, in_use, quiet);
	return vr__books_reserve_other(d, bytes, in_use, rc, quiet);
}

static inline int vr_books_reserve(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	return vr__books_reserve(d, bytes, in_use, 0);
}

static inline int vr_books_reserve_quiet(struct vr_dev *d, uint64_t bytes, uint64_t *in_use)
{
	return vr__books_reserve(d, bytes, in_use, 1);
}

/* Its own group's part of a release. */
static inline void vr__books_release_own(struct vr_dev *d, uint64_t bytes)
{
	if (VR_LIKELY(d->reg >= 0))
		vr_release(vr__books_member, d->reg, bytes);
	else
		vr__books_own_note(
		    d, atomic_fetch_sub_explicit(&d->local_in_use, bytes, memory_order_relaxed) -
		           bytes);
}

static inline void vr_books_release(struct vr_dev *d, uint64_t bytes)
{
	vr__books_release_own(d, bytes);
	if (VR_UNLIKELY(d->nouter))
		vr__outer_release(d, bytes);
}

#endif /* VRAMCTL_HOOK_BOOKS_H */
