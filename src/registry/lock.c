/*
 * lock.c - the group's lock. See region.h for the layout and
 * docs/architecture.md, "The shared registry", for why.
 *
 * One robust process-shared mutex per region, held for a few loads and
 * stores only (never across a system call on the hot path, never across a
 * driver call).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "registry/member.h"

_Atomic long vr_stop_in_lock_countdown;

void vr_read_test_env(void)
{
	const char *s = getenv("VRAMCTL_TEST_STOP_IN_LOCK");
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		if (n > 0)
			atomic_store(&vr_stop_in_lock_countdown, n);
	}
}

uint64_t vr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Recomputes what a writer that died holding the mutex may have left half
 * done: the per-device totals (from the slots, which each writer updates
 * with single stores) and the seqlock parity. Called with the mutex held. */
static void region_recover(struct vr_region_hdr *h)
{
	uint32_t hw = h->slots_hw < h->slot_count ? h->slots_hw : h->slot_count;
	uint32_t ndev = h->ndev < VR_MAX_DEVICES ? h->ndev : VR_MAX_DEVICES;
	h->ndev = ndev;
	STORE32(&h->slots_hw, hw);
	uint64_t seq = atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed);
	if (seq & 1)
		STORE64(&h->seq, seq + 1);
	books_begin(h);
	for (uint32_t d = 0; d < ndev; d++) {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < hw; i++) {
			struct vr_slot *s = vr_region_slot(h, i);
			if (s->state == VR_SLOT_USED)
				sum += s->dev[d].in_use;
		}
		h->dev[d].in_use = sum;
		if (h->dev[d].peak < sum)
			h->dev[d].peak = sum;
	}
	books_end(h);
}

#define VR_LOCK_SLICE_NS 10000000 /* 10 ms */

#if defined(__SANITIZE_THREAD__)
#define VR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VR_TSAN 1
#endif
#endif
#ifndef VR_TSAN
#define VR_TSAN 0
#endif

int vr_region_lock(vr_member *m)
{
	pthread_mutex_t *mx = &m->hdr->lock.mutex;
	int rc = pthread_mutex_trylock(mx);
	if (VR_UNLIKELY(rc == EBUSY)) {
		/* Wait in slices, never once for good: the kernel wakes one
		 * waiter when a holder dies, and if that waiter is killed too
		 * before it takes the lock, the wake-up is lost with it. A
		 * waiter whose slice runs out looks at the lock word again and
		 * takes an abandoned lock itself. */
		uint64_t t0 = vr_now_ns();
#if VR_TSAN
		/* TSan's timedlock interceptor does not count EOWNERDEAD as
		 * locked; TSan builds wait in one piece. */
		rc = pthread_mutex_lock(mx);
#else
		do {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += VR_LOCK_SLICE_NS;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			rc = pthread_mutex_timedlock(mx, &ts);
		} while (rc == ETIMEDOUT);
#endif
		uint64_t w = vr_now_ns() - t0;
		uint64_t old = atomic_load_explicit(&m->max_wait_ns, memory_order_relaxed);
		while (w > old && !atomic_compare_exchange_weak(&m->max_wait_ns, &old, w))
			;
	}
	if (VR_UNLIKELY(rc == EOWNERDEAD)) {
		pthread_mutex_consistent(mx);
		region_recover(m->hdr);
		rc = 0;
	}
	if (VR_UNLIKELY(rc != 0))
		return -rc;
	return 0;
}

void vr_region_unlock(vr_member *m)
{
	pthread_mutex_unlock(&m->hdr->lock.mutex);
}
