/*
 * ptrmap.c - the process-local map from what the program holds (a device
 * pointer, a VMM handle, an array...) to the device and bytes charged for it.
 *
 * 64 stripes, each an open-addressing table (linear probing, deletion by
 * shifting back) behind its own small spinlock. A thread puts what it
 * allocates into its own stripe (the first 64 threads have one each) and
 * looks there first when it frees, so threads allocating at once never
 * write the same cache line; a free from another thread looks through the
 * stripes in use after its own.
 * Tables live in mmap'ed memory, never malloc: the host's allocator is not
 * touched, and the hot path allocates nothing (a table doubles when it is
 * half full, which amortises to nothing; it never shrinks). The spinlock is
 * held for a few loads and stores only, never across a system call.
 */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "hook/ptrmap.h"

#define STRIPES   64
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
	atomic_flag lock;
	struct slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t used;
} __attribute__((aligned(64)));

static struct stripe stripes[STRIPES];
static atomic_uint stripes_used; /* threads given a stripe so far */
static __thread int my_stripe __attribute__((tls_model("initial-exec"))); /* index + 1 */

/* The calling thread's stripe. */
static inline struct stripe *own(void)
{
	if (__builtin_expect(my_stripe == 0, 0))
		my_stripe = (int)(atomic_fetch_add(&stripes_used, 1) % STRIPES) + 1;
	return &stripes[my_stripe - 1];
}

/* How many stripes may hold entries. */
static inline unsigned in_use(void)
{
	unsigned n = atomic_load_explicit(&stripes_used, memory_order_relaxed);
	return n < STRIPES ? n : STRIPES;
}

static inline uint64_t mix(uint64_t key, int kind)
{
	uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

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

/* Finds key's slot, or the empty slot where it would go. Needs cap > 0. */
static struct slot *probe(struct stripe *s, uint64_t key, int kind, uint64_t h, int *found)
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
static struct slot *find(struct stripe *s, uint64_t key, int kind, uint64_t h)
{
	int found = 0;
	struct slot *e = s->cap ? probe(s, key, kind, h, &found) : NULL;
	return found ? e : NULL;
}

/*
 * Removes slot i by shifting later members of its probe run back (no
 * tombstones: alloc/free churn never lengthens probes or forces rehashes).
 */
static void erase(struct stripe *s, size_t i)
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
static int has_room(const struct stripe *s)
{
	return s->cap && (s->used + 1) * 2 <= s->cap;
}

/* Under s's lock: moves every entry into mem (ncap slots, zeroed) and makes
 * it the table. Returns the old table for the caller to unmap unlocked. */
static struct slot *rehash(struct stripe *s, struct slot *mem, size_t ncap)
{
	struct slot *old = s->slots;
	size_t ocap = s->cap;
	s->slots = mem;
	s->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].state != SLOT_FULL)
			continue;
		int found;
		struct slot *e =
		    probe(s, old[i].key, old[i].kind, mix(old[i].key, old[i].kind), &found);
		*e = old[i];
	}
	return old;
}

int vr_map_put(int kind, uint64_t key, int dev, uint64_t bytes, uint16_t site)
{
	return vr_map_put_owned(kind, key, dev, bytes, 0, site);
}

int vr_map_put_owned(int kind, uint64_t key, int dev, uint64_t bytes, uint64_t owner, uint16_t site)
{
	uint64_t h = mix(key, kind);
	struct stripe *s = own();
	int found;
	lock(s);
	/* A full table grows into a fresh mapping. mmap and munmap are system
	 * calls, so they run with the spinlock released (other threads would
	 * spin through them); a thread that finds the table grown meanwhile
	 * gives its mapping back and looks again. */
	while (!has_room(s)) {
		size_t ocap = s->cap, ncap = ocap ? ocap * 2 : MIN_SLOTS;
		unlock(s);
		void *mem = mmap(NULL, ncap * sizeof(struct slot), PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			return -1;
		lock(s);
		if (s->cap != ocap) { /* another thread grew it */
			unlock(s);
			munmap(mem, ncap * sizeof(struct slot));
			lock(s);
			continue;
		}
		struct slot *old = rehash(s, mem, ncap);
		if (old) {
			unlock(s);
			munmap(old, ocap * sizeof(struct slot));
			lock(s);
		}
	}
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
	unlock(s);
	return 0;
}

/* Under the lock of the stripe that holds key: calls fn on its slot and
 * returns 1, or returns 0 when no stripe holds it. Looks in the calling
 * thread's stripe first. */
static int with_slot(int kind, uint64_t key, void (*fn)(struct stripe *, struct slot *, void *),
                     void *arg)
{
	uint64_t h = mix(key, kind);
	struct stripe *first = own();
	unsigned n = in_use();
	for (unsigned i = 0; i <= n; i++) {
		struct stripe *s = i == 0 ? first : &stripes[i - 1];
		if (i > 0 && s == first)
			continue;
		lock(s);
		struct slot *e = find(s, key, kind, h);
		if (e)
			fn(s, e, arg);
		unlock(s);
		if (e)
			return 1;
	}
	return 0;
}

struct taken {
	int *dev;
	uint64_t *bytes;
	uint16_t *site;
};

static void take_slot(struct stripe *s, struct slot *e, void *arg)
{
	struct taken *t = arg;
	*t->dev = e->dev;
	*t->bytes = e->bytes;
	if (t->site)
		*t->site = e->site;
	erase(s, (size_t)(e - s->slots));
}

int vr_map_take(int kind, uint64_t key, int *dev, uint64_t *bytes, uint16_t *site)
{
	struct taken t = {dev, bytes, site};
	return with_slot(kind, key, take_slot, &t);
}

struct added {
	int dev;
	uint64_t delta;
	int found;
};

static void add_slot(struct stripe *s, struct slot *e, void *arg)
{
	(void)s;
	struct added *a = arg;
	a->found = e->dev == a->dev;
	if (a->found)
		e->bytes += a->delta;
}

int vr_map_add(int kind, uint64_t key, int dev, uint64_t delta)
{
	struct added a = {dev, delta, 0};
	return with_slot(kind, key, add_slot, &a) && a.found;
}

int vr_map_take_owned(uint64_t owner, unsigned kinds, uint64_t bytes[], int ndev)
{
	int found = 0;
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (size_t j = 0; j < s->cap;) {
			struct slot *e = &s->slots[j];
			if (e->state != SLOT_FULL || e->owner != owner ||
			    !(kinds & (1u << e->kind))) {
				j++;
				continue;
			}
			if (e->dev >= 0 && e->dev < ndev)
				bytes[e->dev] += e->bytes;
			found++;
			/* Shifting back may move a later slot into j: look at j again.
			 * One that wrapped around from the front was already seen. */
			erase(s, j);
		}
		unlock(s);
	}
	return found;
}

void vr_map_walk(vr_map_walk_fn fn, void *arg)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (size_t j = 0; j < s->cap; j++) {
			const struct slot *e = &s->slots[j];
			if (e->state == SLOT_FULL)
				fn(arg, e->kind, e->key, e->dev, e->bytes, e->site);
		}
		unlock(s);
	}
}

void vr_map_atfork_child(void)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		atomic_flag_clear(&s->lock);
		if (s->slots)
			munmap(s->slots, s->cap * sizeof(struct slot));
		s->slots = NULL;
		s->cap = s->used = 0;
	}
	atomic_store(&stripes_used, 0);
	my_stripe = 0;
}
