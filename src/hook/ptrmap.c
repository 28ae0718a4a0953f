/*
 * ptrmap.c - the process-local map from what the program holds (a device
 * pointer, a VMM handle, an array...) to the device and bytes charged for it.
 *
 * 64 stripes, each an open-addressing table (linear probing, deletion by
 * shifting back). A thread puts what it allocates into its own stripe and
 * looks there first when it frees: most frees are of what the same thread
 * allocated, and then no cache line is written by two threads.
 *
 * Who may touch a stripe: the first 56 threads each own one (until they
 * exit); later threads share the other 8. An owner enters its stripe with
 * two plain stores and a load (its `busy` flag and the `foreign` flag),
 * no atomic read-modify-write. Any other thread (a free of another
 * thread's allocation, a context's teardown, a report's walk) takes the
 * stripe's spinlock, sets `foreign`, and makes every thread of the process
 * pass a full memory barrier (membarrier(2), "asymmetric" fences) before it
 * waits for `busy` to drop: an owner then either is seen busy, or sees
 * `foreign` and takes the spinlock too (docs/architecture.md, "The
 * pointer map"). Where membarrier is missing or refused, and under TSan,
 * which cannot see it, everybody takes the spinlock.
 *
 * Tables live in mmap'ed memory, never malloc: the host's allocator is not
 * touched, and the hot path allocates nothing (a table doubles when it is
 * half full, which amortises to nothing; it never shrinks). A stripe is
 * held for a few loads and stores only, never across a system call.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"
#include "hook/atfork.h"
#include "hook/ptrmap.h"

#if defined(__SANITIZE_THREAD__)
#define VR_ASYM_FENCES 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VR_ASYM_FENCES 0
#endif
#endif
#ifndef VR_ASYM_FENCES
#define VR_ASYM_FENCES 1
#endif

#define REVOKE_AFTER 64 /* fenced entries before a stripe stops being owned */

struct stripe vr__stripes[STRIPES];
__thread int vr__my_stripe, vr__i_own;
static _Atomic uint64_t owned_mask; /* stripes [0, OWNABLE) taken by a thread */
static atomic_uint shared_next;
static atomic_uint high; /* stripes [0, high) and the shared ones may hold entries */
static atomic_int asym;  /* 1: owners go without the lock (fences work), -1: not, 0: not known */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

/* ---- fences: what makes an owner's plain stores safe */

static void *fallback_page; /* for the mprotect barrier, where membarrier fails */

/* Every thread of the process passes a full barrier before this returns. */
static void heavy_barrier(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	/* A change of a mapping's protection flushes the TLB of every CPU
	 * running this process: an interrupt there, a full barrier. */
	if (fallback_page) {
		*(volatile char *)fallback_page = 1;
		(void)mprotect(fallback_page, 4096, PROT_READ);
		(void)mprotect(fallback_page, 4096, PROT_READ | PROT_WRITE);
	}
}

static void release_stripe(void *arg);

static int key_made;
static void make_key(void)
{
	key_made = pthread_key_create(&exit_key, release_stripe) == 0;
}

/* Decides, once per process (a child after fork decides again, with one
 * thread: cheap), whether owners may go without the lock. */
static void init(void)
{
	pthread_once(&key_once, make_key);
	int ok = VR_ASYM_FENCES && key_made;
	if (ok) {
		long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		ok = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
		     syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	}
	if (ok && !fallback_page) {
		void *p =
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fallback_page = p == MAP_FAILED ? NULL : p;
	}
	atomic_store(&asym, ok ? 1 : -1);
}

void vr_map_prepare(void)
{
	if (!atomic_load(&asym))
		init();
}

/* A thread that owned a stripe exits: the stripe keeps what it holds
 * (allocations outlive threads) and can be owned again. */
static void release_stripe(void *arg)
{
	(void)arg;
	if (!vr__i_own || !vr__my_stripe)
		return;
	struct stripe *s = &vr__stripes[vr__my_stripe - 1];
	lock(s);
	atomic_store_explicit(&s->owned, 0, memory_order_relaxed);
	atomic_store_explicit(&s->foreign, 0, memory_order_relaxed);
	s->fenced = 0;
	unlock(s);
	atomic_fetch_and(&owned_mask, ~(1ull << (vr__my_stripe - 1)));
	vr__my_stripe = vr__i_own = 0;
}

/* Gives the calling thread a stripe: one of its own if one is free. */
void vr__map_take_stripe(void)
{
	vr_map_prepare(); /* racing threads may decide twice: harmless */
	uint64_t m = atomic_load(&owned_mask);
	while (atomic_load_explicit(&asym, memory_order_relaxed) > 0 &&
	       m != (1ull << OWNABLE) - 1) {
		int i = __builtin_ctzll(~m);
		if (atomic_compare_exchange_weak(&owned_mask, &m, m | 1ull << i)) {
			struct stripe *s = &vr__stripes[i];
			lock(s);
			atomic_store_explicit(&s->owned, 1, memory_order_relaxed);
			unlock(s);
			unsigned h = atomic_load(&high);
			while (h < (unsigned)i + 1 &&
			       !atomic_compare_exchange_weak(&high, &h, (unsigned)i + 1))
				;
			(void)pthread_setspecific(exit_key, &vr__stripes[i]);
			vr__my_stripe = i + 1;
			vr__i_own = 1;
			return;
		}
	}
	vr__my_stripe =
	    OWNABLE + (int)(atomic_fetch_add(&shared_next, 1) % (STRIPES - OWNABLE)) + 1;
	vr__i_own = 0;
}

/* Takes another thread's stripe's lock; if it has an owner, marks it
 * foreign (the caller then fences once and waits: settle_foreign). */
static inline enum via lock_foreign(struct stripe *s)
{
	lock(s);
	if (!atomic_load_explicit(&s->owned, memory_order_relaxed))
		return VIA_LOCK;
	atomic_store_explicit(&s->foreign, 1, memory_order_relaxed);
	return VIA_FENCED;
}

/* After the fence: waits until the owner is out of its stripe. */
static inline void settle_foreign(struct stripe *s)
{
	while (atomic_load_explicit(&s->busy, memory_order_acquire))
		sched_yield();
}

/* Enters every stripe that may hold entries, but skip (NULL: none), in
 * order: the locks, one fence for all the owned ones, then their owners'
 * way out. vias[i] says how stripe i was entered (-1: not). */
static void enter_all(struct stripe *skip, int vias[STRIPES])
{
	unsigned n = atomic_load(&high);
	int fenced = 0;
	for (unsigned i = 0; i < STRIPES; i++) {
		struct stripe *s = &vr__stripes[i];
		vias[i] = -1;
		if (s == skip || (i >= n && i < OWNABLE))
			continue;
		if (vr__my_stripe && s == &vr__stripes[vr__my_stripe - 1]) {
			lock(s); /* our own: no owner but us to wait for */
			vias[i] = VIA_LOCK;
			continue;
		}
		vias[i] = lock_foreign(s);
		fenced |= vias[i] == VIA_FENCED;
	}
	if (!fenced)
		return;
	heavy_barrier();
	for (unsigned i = 0; i < STRIPES; i++)
		if (vias[i] == VIA_FENCED)
			settle_foreign(&vr__stripes[i]);
}

/*
 * Leaves a stripe entered fenced. One that other threads keep reaching
 * into (frees of blocks its owner allocated, every one a membarrier) stops
 * being owned: `foreign` stays set, so its owner takes the lock from now on
 * like everybody, and nobody fences for it again.
 */
static void leave_fenced(struct stripe *s)
{
	if (++s->fenced >= REVOKE_AFTER)
		atomic_store_explicit(&s->owned, 0, memory_order_relaxed);
	else
		atomic_store_explicit(&s->foreign, 0, memory_order_release);
	unlock(s);
}

static void leave_all(int vias[STRIPES])
{
	for (unsigned i = 0; i < STRIPES; i++) {
		if (vias[i] == VIA_FENCED)
			leave_fenced(&vr__stripes[i]);
		else if (vias[i] >= 0)
			leave(&vr__stripes[i], (enum via)vias[i]);
	}
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

/* The calling thread's stripe, entered as v, has no room for one more
 * entry: grows it. mmap and munmap are system calls, so they run with the
 * stripe left (other threads would spin through them); a thread that finds
 * the table grown meanwhile gives its mapping back and looks again. 0 with
 * the stripe entered again (*v), or -1 with it left. */
int vr__map_grow(struct stripe *s, enum via *v)
{
	while (!has_room(s)) {
		size_t ocap = s->cap, ncap = ocap ? ocap * 2 : MIN_SLOTS;
		leave(s, *v);
		void *mem = mmap(NULL, ncap * sizeof(struct slot), PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			return -1;
		*v = enter_mine(s);
		if (s->cap != ocap) { /* another thread grew it */
			leave(s, *v);
			munmap(mem, ncap * sizeof(struct slot));
			*v = enter_mine(s);
			continue;
		}
		struct slot *old_slots = rehash(s, mem, ncap);
		if (old_slots) {
			leave(s, *v);
			munmap(old_slots, ocap * sizeof(struct slot));
			*v = enter_mine(s);
		}
	}
	return 0;
}

/* In the stripes other than mine, entered all at once: calls fn on key's
 * slot and returns 1, or returns 0 when none holds it. */
static int in_others(struct stripe *mine, int kind, uint64_t key, uint64_t h,
                     void (*fn)(struct stripe *, struct slot *, void *), void *arg)
{
	int vias[STRIPES];
	struct slot *e = NULL;
	enter_all(mine, vias);
	for (int i = 0; i < STRIPES && !e; i++) {
		if (vias[i] < 0)
			continue;
		e = find(&vr__stripes[i], key, kind, h);
		if (e)
			fn(&vr__stripes[i], e, arg);
	}
	leave_all(vias);
	return e != NULL;
}

/* With the stripe that holds key entered: calls fn on its slot and returns
 * 1, or returns 0 when no stripe holds it. Looks in the calling thread's
 * stripe first, then in all the others at once. vr_map_take
 * (ptrmap_table.h) is the same walk written out: through fn and its
 * argument in memory, every free would cost 15 instructions more. */
static inline __attribute__((always_inline)) int
with_slot(int kind, uint64_t key, void (*fn)(struct stripe *, struct slot *, void *), void *arg)
{
	uint64_t h = mix(key, kind);
	struct stripe *mine = own();
	enum via v = enter_mine(mine);
	struct slot *e = find(mine, key, kind, h);
	if (e)
		fn(mine, e, arg);
	leave(mine, v);
	return e ? 1 : in_others(mine, kind, key, h, fn, arg);
}

struct taken {
	int *dev;
	uint64_t *bytes;
	uint16_t *site;
};

static inline void take_slot(struct stripe *s, struct slot *e, void *arg)
{
	struct taken *t = arg;
	*t->dev = e->dev;
	*t->bytes = e->bytes;
	if (t->site)
		*t->site = e->site;
	erase(s, (size_t)(e - s->slots));
}

int vr__map_take_others(struct stripe *mine, int kind, uint64_t key, uint64_t h, int *dev,
                        uint64_t *bytes, uint16_t *site)
{
	struct taken t = {dev, bytes, site};
	return in_others(mine, kind, key, h, take_slot, &t);
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

int vr_map_take_owned(uint64_t owner, unsigned kinds, uint64_t bytes[], int ndev, uint64_t *host)
{
	int found = 0, vias[STRIPES];
	enter_all(NULL, vias);
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &vr__stripes[i];
		if (vias[i] < 0)
			continue;
		for (size_t j = 0; j < s->cap;) {
			struct slot *e = &s->slots[j];
			if (e->state != SLOT_FULL || e->owner != owner ||
			    !(kinds & (1u << e->kind))) {
				j++;
				continue;
			}
			if (e->dev >= 0 && e->dev < ndev)
				bytes[e->dev] += e->bytes;
			else if (e->kind == VR_KIND_HOST && host)
				*host += e->bytes;
			found++;
			/* Shifting back may move a later slot into j: look at j again.
			 * One that wrapped around from the front was already seen. */
			erase(s, j);
		}
	}
	leave_all(vias);
	return found;
}

void vr_map_walk(vr_map_walk_fn fn, void *arg)
{
	int vias[STRIPES];
	enter_all(NULL, vias);
	for (int i = 0; i < STRIPES; i++) {
		const struct stripe *s = &vr__stripes[i];
		for (size_t j = 0; vias[i] >= 0 && j < s->cap; j++) {
			const struct slot *e = &s->slots[j];
			if (e->state == SLOT_FULL)
				fn(arg, e->kind, e->key, e->dev, e->bytes, e->site);
		}
	}
	leave_all(vias);
}

static void map_atfork_child(void)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &vr__stripes[i];
		atomic_flag_clear(&s->lock);
		atomic_store(&s->owned, 0);
		atomic_store(&s->busy, 0);
		atomic_store(&s->foreign, 0);
		s->fenced = 0;
		if (s->slots)
			munmap(s->slots, s->cap * sizeof(struct slot));
		s->slots = NULL;
		s->cap = s->used = 0;
	}
	/* The forking thread is the child's only one: a stripe's owner again
	 * at its next allocation, once init() has registered this address
	 * space for membarrier. */
	atomic_store(&owned_mask, 0);
	atomic_store(&high, 0);
	vr__my_stripe = vr__i_own = 0;
	atomic_store(&asym, 0);
}
VR_ATFORK_CHILD(map_atfork_child);
