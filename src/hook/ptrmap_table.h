/*
 * ptrmap_table.h - the pointer map's stripes and tables (ptrmap.c), inline:
 * every allocation records itself and every free takes its record back,
 * so these paths are compiled into the wrappers. Internal to the map: only
 * ptrmap.h and ptrmap.c include it.
 */
#ifndef VRAMCTL_HOOK_PTRMAP_TABLE_H
#define VRAMCTL_HOOK_PTRMAP_TABLE_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

#define STRIPES   64
#define OWNABLE   56 /* stripes [0, OWNABLE) have one owner each; the rest are shared */
#define MIN_SLOTS 16 /* small tables stay small: 64 x 16 x 32 bytes */

enum { SLOT_EMPTY = 0, SLOT_FULL = 1 };

struct slot {
	uint64_t key;
	uint64_t bytes;
	uint64_t owner; /* the context that owns it, 0: none (see vr_map_put_owned) */
	int32_t dev;
	uint8_t kind;
	uint8_t state;
	uint16_t site; /* call site + 1 (record.c), 0 none */
};

struct stripe {
	atomic_flag lock;    /* everyone but an owner on its own fast path */
	_Atomic int owned;   /* a thread owns it (changed under the lock) */
	_Atomic int busy;    /* its owner is inside without the lock */
	_Atomic int foreign; /* another thread holds the lock, fenced; stays
	                        set once ownership is revoked (ptrmap.c) */
	unsigned fenced;     /* fenced entries so far (under the lock) */
	struct slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t used;
} __attribute__((aligned(64)));

extern struct stripe vr__stripes[STRIPES];
/* The calling thread's stripe (index + 1, 0: none yet) and whether it owns it. */
extern __thread int vr__my_stripe __attribute__((tls_model("initial-exec")));
extern __thread int vr__i_own __attribute__((tls_model("initial-exec")));
/* Gives the calling thread a stripe (ptrmap.c). */
void vr__map_take_stripe(void);

static inline void lock(struct stripe *s)
{
	int spins = 0;
	while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire)) {
		if (++spins > 64) {
			sched_yield();
			spins = 0;
		}
	}
}

static inline void unlock(struct stripe *s)
{
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

/* How a stripe was entered, to leave it the same way. */
enum via { VIA_OWNER, VIA_LOCK, VIA_FENCED };

/* Enters the calling thread's own stripe. */
static inline enum via enter_mine(struct stripe *s)
{
	if (VR_LIKELY(vr__i_own)) {
		atomic_store_explicit(&s->busy, 1, memory_order_relaxed);
		/* The store above and the load below are ordered by a barrier
		 * in this thread only when a foreign thread asks for one. */
		atomic_signal_fence(memory_order_seq_cst);
		if (VR_LIKELY(!atomic_load_explicit(&s->foreign, memory_order_acquire)))
			return VIA_OWNER;
		atomic_store_explicit(&s->busy, 0, memory_order_release);
	}
	lock(s);
	return VIA_LOCK;
}

static inline void leave(struct stripe *s, enum via v)
{
	if (v == VIA_OWNER) {
		atomic_store_explicit(&s->busy, 0, memory_order_release);
		return;
	}
	if (v == VIA_FENCED)
		atomic_store_explicit(&s->foreign, 0, memory_order_release);
	unlock(s);
}

/* The calling thread's stripe. */
static inline struct stripe *own(void)
{
	if (VR_UNLIKELY(vr__my_stripe == 0))
		vr__map_take_stripe();
	return &vr__stripes[vr__my_stripe - 1];
}

static inline uint64_t mix(uint64_t key, int kind)
{
	uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

/* Finds key's slot, or the empty slot where it would go. Needs cap > 0. */
static inline struct slot *probe(struct stripe *s, uint64_t key, int kind, uint64_t h, int *found)
{
	size_t mask = s->cap - 1, i = (size_t)(h >> 6) & mask;
	for (;;) {
		struct slot *e = &s->slots[i];
		if (e->state == SLOT_EMPTY) {
			*found = 0;
			return e;
		}
		if (e->key == key && e->kind == kind) {
			*found = 1;
			return e;
		}
		i = (i + 1) & mask;
	}
}

/* Under s's lock: key's slot, or NULL if it is not there. */
static inline struct slot *find(struct stripe *s, uint64_t key, int kind, uint64_t h)
{
	int found = 0;
	struct slot *e = s->cap ? probe(s, key, kind, h, &found) : NULL;
	return found ? e : NULL;
}

/*
 * Removes slot i by shifting later members of its probe run back (no
 * tombstones: alloc/free churn never lengthens probes or forces rehashes).
 */
static inline void erase(struct stripe *s, size_t i)
{
	size_t mask = s->cap - 1, j = i;
	for (;;) {
		j = (j + 1) & mask;
		struct slot *e = &s->slots[j];
		if (e->state == SLOT_EMPTY)
			break;
		size_t home = (size_t)(mix(e->key, e->kind) >> 6) & mask;
		/* e may move to i if its home is not cyclically within (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			s->slots[i] = *e;
			i = j;
		}
	}
	s->slots[i].state = SLOT_EMPTY;
	s->used--;
}

/* Whether one more entry fits (a table stays at most half full). Under
 * s's lock. */
static inline int has_room(const struct stripe *s)
{
	return s->cap && (s->used + 1) * 2 <= s->cap;
}

/* ptrmap.c: the stripe entered as *v is full: grows it (0, entered again
 * as *v), or -1 with it left. */
int vr__map_grow(struct stripe *s, enum via *v);
/* ptrmap.c: vr_map_take in every stripe but the caller's (mine). */
int vr__map_take_others(struct stripe *mine, int kind, uint64_t key, uint64_t h, int *dev,
                        uint64_t *bytes, uint16_t *site);

static inline __attribute__((always_inline)) int
vr_map_put_owned(int kind, uint64_t key, int dev, uint64_t bytes, uint64_t owner, uint16_t site)
{
	uint64_t h = mix(key, kind);
	struct stripe *s = own();
	int found;
	enum via v = enter_mine(s);
	if (VR_UNLIKELY(!has_room(s)) && vr__map_grow(s, &v) != 0)
		return -1;
	struct slot *e = probe(s, key, kind, h, &found);
	if (!found)
		s->used++;
	/* A key the driver hands out again was freed behind our back
	 * (e.g. by a context reset): the new allocation replaces it. */
	*e = (struct slot){.key = key,
	                   .bytes = bytes,
	                   .owner = owner,
	                   .dev = dev,
	                   .kind = (uint8_t)kind,
	                   .state = SLOT_FULL,
	                   .site = site};
	leave(s, v);
	return 0;
}

static inline __attribute__((always_inline)) int vr_map_take(int kind, uint64_t key, int *dev,
                                                             uint64_t *bytes, uint16_t *site)
{
	uint64_t h = mix(key, kind);
	struct stripe *s = own();
	enum via v = enter_mine(s);
	struct slot *e = find(s, key, kind, h);
	if (e) {
		*dev = e->dev;
		*bytes = e->bytes;
		if (site)
			*site = e->site;
		erase(s, (size_t)(e - s->slots));
	}
	leave(s, v);
	return e ? 1 : vr__map_take_others(s, kind, key, h, dev, bytes, site);
}

#endif /* VRAMCTL_HOOK_PTRMAP_TABLE_H */
