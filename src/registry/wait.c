/*
 * wait.c - waiting for room in the group's books (registry.h,
 * "Waiting for room"; docs/architecture.md, "Waiting for room").
 *
 * A member whose reserve the cap refused may wait for room instead of
 * failing. It says so in its slot (the device, the bytes, since when, its
 * ticket: its place in the group's order) and sleeps on the header's wake
 * word, a futex on the shared segment: whoever makes room while someone
 * waits (a release into the books, a reclaim, a park, a cap raised) bumps
 * the word and wakes every sleeper. No polling: a sleeper wakes for a
 * release or, at the latest, after a slice (vr_wait_slice_ns, 250 ms) to
 * look for members that died (their slots are reclaimed, their room made).
 *
 * Order: only the oldest live wait on a device takes room, and it takes
 * what there is as it comes (set aside in the books, in its slot word and
 * the total, as any reserve), until it has all it asked: so a large
 * request is served before smaller ones that came after it, whoever frees
 * what and in which pieces. A wait whose member died holds nobody up: the
 * order skips members whose liveness lock is gone, and their slot (with
 * what it had set aside) is reclaimed like any dead member's.
 *
 * A wait that could never end fails at once: the request alone passes the
 * cap, or every other live member of the group waits too (nobody is left
 * to free anything: the newest of them gives up). Launchers do not count:
 * they hold no memory of their own.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "registry/alive.h"
#include "registry/books.h"
#include "registry/knobs.h"
#include "registry/member.h"
#include "registry/reclaim.h"
#include "registry/util.h"
#include "registry/wait.h"

static _Atomic uint32_t *wake_word(struct vr_hdr *h)
{
	return (_Atomic uint32_t *)&h->wait.wake;
}

static _Atomic uint32_t *waiters_word(struct vr_hdr *h)
{
	return (_Atomic uint32_t *)&h->wait.waiters;
}

/* A live member of the group other than self that is not a launcher:
 * 1 waiting, 0 not waiting (it may free something), -1 not a live member. */
static int member_waits(vr_member *m, uint32_t i, uint64_t *ticket)
{
	struct vr_slot *s = vr_slot_at(m->hdr, i);
	if (atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) !=
	        VR_SLOT_USED ||
	    (atomic_load_explicit((_Atomic uint32_t *)&s->flags, memory_order_relaxed) &
	     VR_SLOT_F_LAUNCHER) ||
	    vr_slot_alive(m->fd, i) == 0)
		return -1;
	if (!atomic_load_explicit((_Atomic uint32_t *)&s->wait.dev, memory_order_acquire))
		return 0;
	*ticket = atomic_load_explicit((_Atomic uint64_t *)&s->wait.ticket, memory_order_relaxed);
	return 1;
}

/* Nobody is left to free room: -ESRCH when this member is the group's
 * only live one, -EDEADLK when every other waits too and this wait
 * (ticket) is the newest of them all; else 0. */
static int stuck(vr_member *m, uint64_t ticket)
{
	uint32_t hw = vr_hdr_hw(m->hdr);
	int others = 0;
	for (uint32_t i = 0; i < hw; i++) {
		uint64_t t = 0;
		if (i == m->slot_idx)
			continue;
		int w = member_waits(m, i, &t);
		if (w == 0)
			return 0; /* someone can still free */
		if (w > 0 && t > ticket)
			return 0; /* a newer wait gives up first */
		others += w > 0;
	}
	return others ? -EDEADLK : -ESRCH;
}

/* 1 when no older live wait is on dev: this one takes room first. */
static int first_in_line(vr_member *m, const struct vr_wait *w)
{
	uint32_t hw = vr_hdr_hw(m->hdr);
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_slot *s = vr_slot_at(m->hdr, i);
		uint64_t t = 0;
		if (i == m->slot_idx ||
		    atomic_load_explicit((_Atomic uint32_t *)&s->wait.dev, memory_order_acquire) !=
		        (uint32_t)w->dev + 1)
			continue;
		if (member_waits(m, i, &t) > 0 && t < w->ticket)
			return 0;
	}
	return 1;
}

int vr_wait_enter(vr_member *m, int dev, uint64_t bytes, struct vr_wait *w)
{
	if (!m || dev < 0 || dev >= VR_MAX_DEVICES || !m->priv[dev].known)
		return -EINVAL;
	if (vr_is_detached(m))
		return -ENOTSUP;
	if (bytes > atomic_load_explicit(&m->priv[dev].cap, memory_order_acquire))
		return -E2BIG;
	struct vr_hdr *h = m->hdr;
	struct vr_slot_wait *sw = &m->slot->wait;
	w->dev = dev;
	w->bytes = bytes;
	w->claimed = 0;
	w->ticket = atomic_fetch_add((_Atomic uint64_t *)&h->wait.tickets, 1) + 1;
	/* Dead members first: their room, and they are not waiting. */
	vr_reclaim_dead(m);
	STORE64(&sw->bytes, bytes);
	STORE64(&sw->claimed, 0);
	STORE64(&sw->since, vr_real_ns());
	STORE64(&sw->ticket, w->ticket);
	STORE32(&sw->dev, (uint32_t)dev + 1);
	atomic_fetch_add(waiters_word(h), 1);
	int rc = stuck(m, w->ticket);
	if (rc != 0)
		vr_wait_exit(m, w, 0);
	return rc;
}

/* Room on dev as the books say now: the cap less the total. */
static uint64_t room_of(vr_member *m, int dev)
{
	uint64_t cap = atomic_load_explicit(&m->priv[dev].cap, memory_order_acquire);
	uint64_t used = vr_dev_total(&m->hdr->dev[dev]);
	return used < cap ? cap - used : 0;
}

int vr_wait_turn(vr_member *m, struct vr_wait *w)
{
	struct vr_hdr *h = m->hdr;
	/* Read before looking: a release after this moves it, and the sleep
	 * then returns at once. */
	w->seen = atomic_load(wake_word(h));
	if (vr_is_detached(m))
		return -ENOTSUP;
	if (w->claimed < w->bytes && first_in_line(m, w)) {
		uint64_t want = w->bytes - w->claimed, room = room_of(m, w->dev);
		uint64_t take = want < room ? want : room;
		/* Set aside, not handed out: the peaks are raised at the grant. */
		if (take && vr_reg_take(m, w->dev, take, take, NULL, VR_TAKE_TRY) == 0) {
			w->claimed += take;
			STORE64(&m->slot->wait.claimed, w->claimed);
		}
	}
	if (w->claimed == w->bytes)
		return 1;
	return stuck(m, w->ticket);
}

void vr_wait_sleep(vr_member *m, struct vr_wait *w, uint64_t deadline_ns)
{
	uint64_t now = vr_now_ns();
	if (now >= deadline_ns)
		return;
	uint64_t left = deadline_ns - now;
	/* The longest it sleeps without looking again (dead members, a cap
	 * changed): a bound on a missed wake-up, never a poll of the books
	 * (a release wakes it at once). */
	if (left > vr_wait_slice_ns)
		left = vr_wait_slice_ns;
	struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
	syscall(SYS_futex, (uint32_t *)wake_word(m->hdr), FUTEX_WAIT, w->seen, &ts, NULL, 0);
	/* A slice passed: a member may have died meanwhile. */
	if (vr_now_ns() - now >= left)
		vr_reclaim_dead(m);
}

void vr_wait_exit(vr_member *m, struct vr_wait *w, int keep)
{
	struct vr_hdr *h = m->hdr;
	STORE32(&m->slot->wait.dev, 0);
	STORE64(&m->slot->wait.claimed, 0);
	atomic_fetch_sub(waiters_word(h), 1);
	if (!keep && w->claimed) {
		vr_reg_give(m, w->dev, w->claimed);
		w->claimed = 0;
	} else if (keep && !vr_is_detached(m)) {
		/* Handed out now: the peaks see it (lanes' spare aside). */
		struct vr_hdr_dev *g = &h->dev[w->dev];
		uint64_t t = vr_dev_total(g);
		uint64_t mine = vr_slot_used(h, m->slot_idx, (uint32_t)w->dev);
		vr_peak_raise(&g->peak, t);
		vr_peak_raise(&vr_counts_at(h, m->slot_idx, (uint32_t)w->dev)->peak, mine);
	}
	/* The next in line may take room now (and what was given back). */
	vr__wake_waiters(h);
}

void vr_idle_note(vr_member *m, uint64_t since_ns, int parkable)
{
	if (!m || vr_is_detached(m))
		return;
	struct vr_slot_wait *sw = &m->slot->wait;
	STORE64(&sw->idle_since, since_ns);
	uint32_t f = parkable ? VR_PARK_F_PARKABLE : 0;
	if (atomic_load_explicit((_Atomic uint32_t *)&sw->flags, memory_order_relaxed) != f)
		STORE32(&sw->flags, f);
}
