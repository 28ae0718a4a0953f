/*
 * wait.c - waiting for room instead of out-of-memory (wait.h): the
 * registry's wait (registry.h: a place in the group's order, room set
 * aside as it comes, a futex the books' releases wake) as one thread of
 * this process uses it. Its other threads queue behind it (a mutex taken
 * within their own deadline): a member has one wait in the group at a
 * time, and it is served in the group's order.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "common/clock.h"
#include "hook/atfork.h"
#include "hook/books.h"
#include "hook/outer.h"
#include "hook/wait.h"

static pthread_mutex_t one_wait = PTHREAD_MUTEX_INITIALIZER;

/* The process's turn to wait, within the (monotonic) deadline: 0 or -1.
 * pthread_mutex_timedlock in slices of 100 ms at most, each on the real
 * clock and the deadline checked on the monotonic one between them: a
 * jump of the real clock shortens or lengthens one slice only. (Not
 * pthread_mutex_clocklock: ThreadSanitizer does not see it take the lock,
 * and calls the unlock wrong.) */
static int take_turn(uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = vr_mono_ns();
		if (now >= deadline_ns)
			return pthread_mutex_trylock(&one_wait) == 0 ? 0 : -1;
		uint64_t slice =
		    deadline_ns - now < 100000000ull ? deadline_ns - now : 100000000ull;
		uint64_t at = vr_real_ns() + slice;
		struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
		int rc = pthread_mutex_timedlock(&one_wait, &ts);
		if (rc == 0)
			return 0;
		if (rc != ETIMEDOUT && rc != EINTR)
			return -1;
	}
}

/* The registry's wait for bytes on d (its own group): 0 granted, else the
 * end. */
static enum vr_wait_end own_group(struct vr_dev *d, uint64_t bytes, uint64_t deadline_ns)
{
	vr_member *m = vr__books_member;
	struct vr_wait w;
	int rc = vr_wait_enter(m, d->reg, bytes, &w);
	if (rc == -E2BIG)
		return VR_WAITED_TOO_BIG;
	if (rc == -EDEADLK)
		return VR_WAITED_DEADLOCK;
	if (rc == -ESRCH)
		return VR_WAITED_ALONE;
	if (rc != 0)
		return VR_WAITED_OWN_BOOKS;
	while ((rc = vr_wait_turn(m, &w)) == 0 && vr_mono_ns() < deadline_ns)
		vr_wait_sleep(m, &w, deadline_ns);
	vr_wait_exit(m, &w, rc == 1);
	return rc == 1          ? VR_WAITED_GRANTED
	       : rc == -EDEADLK ? VR_WAITED_DEADLOCK
	       : rc == -ESRCH   ? VR_WAITED_ALONE
	                        : VR_WAITED_TIME;
}

int vr_wait_room_own(struct vr_dev *d, uint64_t bytes, uint64_t deadline_ns, struct vr_waited *w)
{
	uint64_t t0 = vr_mono_ns();
	w->end = VR_WAITED_OWN_BOOKS;
	if (d->reg >= 0 && vr__books_member) {
		w->end = VR_WAITED_TIME;
		if (take_turn(deadline_ns) == 0) {
			VR_OWN(w->end = own_group(d, bytes, deadline_ns));
			pthread_mutex_unlock(&one_wait);
		}
	}
	w->ns = vr_mono_ns() - t0;
	return w->end == VR_WAITED_GRANTED ? 0 : -1;
}

int vr_wait_room(struct vr_dev *d, uint64_t bytes, uint64_t deadline_ns, struct vr_waited *w)
{
	uint64_t t0 = vr_mono_ns();
	vr_wait_room_own(d, bytes, deadline_ns, w);
	if (w->end == VR_WAITED_GRANTED && d->nouter) {
		/* The job's groups too; a wait there is not served in order
		 * (its members are other groups'): refused, the caller tries
		 * again while time is left. */
		uint64_t in_use = 0;
		if (vr__outer_reserve(d, bytes, &in_use, 1) != 0) {
			vr__books_release_own(d, bytes);
			w->end = VR_WAITED_OTHER;
		}
	}
	w->ns = vr_mono_ns() - t0;
	return w->end == VR_WAITED_GRANTED ? 0 : -1;
}

const char *vr_wait_why(enum vr_wait_end end)
{
	switch (end) {
	case VR_WAITED_DEADLOCK:
		return " without waiting: every other live member of the group is waiting for "
		       "memory "
		       "too, so none would free any (the newest wait gives up)";
	case VR_WAITED_ALONE:
		return " without waiting: the group has no other live process that could free "
		       "memory";
	case VR_WAITED_TOO_BIG:
		return " without waiting: the request alone is more than the cap";
	case VR_WAITED_OWN_BOOKS:
		return " without waiting: this process keeps its own books, so no other process's "
		       "free makes room for it";
	default:
		return "";
	}
}

/* In a fork child: no wait of the parent's is the child's. */
static void wait_atfork_child(void)
{
	pthread_mutex_init(&one_wait, NULL);
}
VR_ATFORK_CHILD(wait_atfork_child);
