/*
 * regtest.h - helpers the registry tests share: the random reserve/release
 * churn of the stress tests (test_concurrency, test_chaos), re-executing a
 * test as a member that stops itself inside the group's lock (test_chaos,
 * test_snapshot), a forked member that reports and stays alive
 * (test_api, test_snapshot), and a crowd of them let in at once
 * (test_attach, test_upgrade).
 */
#ifndef VRAMCTL_REGTEST_H
#define VRAMCTL_REGTEST_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "registry/registry.h"
#include "tests/test.h"

/* xorshift64: a fast, reproducible sequence from a nonzero seed. */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The slot of the live member with this pid in obs's books, or fails. */
static inline uint32_t slot_of(vr_member *obs, pid_t pid)
{
	for (uint32_t i = 0; i < vr_hdr_hw(obs->hdr); i++)
		if (vr_slot_at(obs->hdr, i)->state == VR_SLOT_USED &&
		    vr_slot_at(obs->hdr, i)->pid == (int32_t)pid)
			return i;
	TEST_FAILF("no slot for pid %d", (int)pid);
	return 0;
}

/* Joins as o says, or fails the test with the join's message. */
static inline vr_member *join_or_fail(const struct vr_join_opts *o)
{
	vr_member *m = NULL;
	char err[256];
	int rc = vr_join(o, &m, NULL, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("vr_join(%s) = %d: %s", o->group, rc, err);
	return m;
}

/* Joins o's group and opens device uuid, which must come back capped at
 * cap; or fails the test. */
static inline vr_member *join_device_or_fail(const struct vr_join_opts *o,
                                             const unsigned char *uuid, uint64_t cap)
{
	vr_member *m = join_or_fail(o);
	uint64_t got = 0;
	ASSERT_EQ(vr_device(m, uuid, cap, &got), 0);
	ASSERT_UEQ(got, cap);
	return m;
}

/*
 * A stress worker's start: joins `group` in dir with the spec "1M" and opens
 * the device uuid, which must come back capped at cap. Returns 0 with *m set,
 * else the worker's exit status: 2 when the join failed (said on stderr with
 * the worker's id), 3 when the device or its cap is wrong.
 */
static inline int churn_join(const char *dir, const char *group, const unsigned char *uuid,
                             uint64_t cap, int id, vr_member **m)
{
	/* With VRAMCTL_TEST_LANE_QUANTUM set, its threads keep lanes. */
	struct vr_join_opts o = {.dir = dir,
	                         .group = group,
	                         .limit_spec = "1M",
	                         .lanes = getenv("VRAMCTL_TEST_LANE_QUANTUM") != NULL};
	char err[256];
	if (vr_join(&o, m, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "worker %d: %s\n", id, err);
		return 2;
	}
	uint64_t got = 0;
	if (vr_device(*m, uuid, 1, &got) != 0 || got != cap)
		return 3;
	return 0;
}

#define CHURN_THREADS  4
#define CHURN_MAX_HELD 64

struct churn {
	vr_member *m;
	int id;          /* the worker's number: threads seed from it */
	int iters;       /* rounds per thread */
	int most;        /* reservations one thread holds at most, <= CHURN_MAX_HELD */
	uint64_t cap;    /* each reservation is 1 .. cap/8 bytes */
	_Atomic int bad; /* the last error other than -ENOSPC; 0 if none */
};

struct churn_arg {
	struct churn *c;
	uint64_t seed;
};

static inline void *churn_thread_main(void *arg)
{
	struct churn *c = ((struct churn_arg *)arg)->c;
	uint64_t seed = ((struct churn_arg *)arg)->seed * 0x9e3779b97f4a7c15ull + 1;
	uint64_t held[CHURN_MAX_HELD];
	int n = 0;
	for (int i = 0; i < c->iters; i++) {
		if (n < c->most && (n == 0 || rnd(&seed) % 2)) {
			uint64_t b = 1 + rnd(&seed) % (c->cap / 8);
			int rc = vr_reserve(c->m, 0, b, NULL);
			if (rc == 0)
				held[n++] = b;
			else if (rc != -ENOSPC)
				c->bad = rc;
		} else {
			int k = (int)(rnd(&seed) % (uint64_t)n);
			vr_release(c->m, 0, held[k]);
			held[k] = held[--n];
		}
	}
	while (n > 0)
		vr_release(c->m, 0, held[--n]);
	return NULL;
}

/*
 * Runs CHURN_THREADS threads that each, for c->iters rounds, reserve a
 * random amount on device 0 of c->m or release one of their reservations at
 * random, then release what they still hold. Thread i of worker id seeds
 * from id * CHURN_THREADS + i + 1. Returns c->bad: 0, or the last error other
 * than -ENOSPC that a reservation returned.
 */
static inline int churn_run(struct churn *c)
{
	pthread_t t[CHURN_THREADS];
	struct churn_arg arg[CHURN_THREADS];
	for (int i = 0; i < CHURN_THREADS; i++) {
		arg[i].c = c;
		arg[i].seed = (uint64_t)(c->id * CHURN_THREADS + i + 1);
		pthread_create(&t[i], NULL, churn_thread_main, &arg[i]);
	}
	for (int i = 0; i < CHURN_THREADS; i++)
		pthread_join(t[i], NULL);
	return c->bad;
}

/*
 * Re-executes this test as `argv0 stopper` with VRAMCTL_TEST_STOP_IN_LOCK=N
 * (start_stopper: 2), which makes it stop itself (SIGSTOP) at its Nth stop
 * point: inside a locked section that writes the books (lock held), or
 * inside a lock-free reserve or release between its writes to the total
 * and to its slot word (member.h, vr_test_stop_point); and waits until it
 * has stopped. The test's main
 * runs its stopper for that argument. Returns the child's pid; the caller
 * SIGKILLs and reaps it.
 */
static inline pid_t start_stopper_at(const char *argv0, const char *nth)
{
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		setenv("VRAMCTL_TEST_STOP_IN_LOCK", nth, 1);
		execl("/proc/self/exe", argv0, "stopper", (char *)NULL);
		_exit(127);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, WUNTRACED), pid);
	ASSERT(WIFSTOPPED(st)); /* at its nth stop point */
	return pid;
}

static inline pid_t start_stopper(const char *argv0)
{
	return start_stopper_at(argv0, "2");
}

/*
 * A forked member that must stay alive, holding what it reserved, while the
 * parent looks: the child ends with hold_and_report(fd, ok), ok being 1 when
 * its setup worked, which writes 'y' or 'n' to the pipe and waits to be
 * killed (exit 2 if the write fails); the parent calls expect_held(fd),
 * which asserts that it reads 'y'.
 */
static inline _Noreturn void hold_and_report(int fd, int ok)
{
	char c = ok ? 'y' : 'n';
	if (write(fd, &c, 1) != 1)
		_exit(2);
	pause();
	_exit(0);
}

static inline void expect_held(int fd)
{
	char ok = 0;
	ASSERT_EQ(read(fd, &ok, 1), 1);
	ASSERT_EQ(ok, 'y');
}

/*
 * A crowd of n forked members of one group, held alive until released:
 * each waits to be let in (crowd_go, all at once), joins as o says, names
 * uuid (cap 1 GiB) and reserves bytes on it, reports its slot index (-1
 * when a step failed, with the join's message on stderr), and stays a
 * member until crowd_release.
 */
#define CROWD_MAX 1024
struct crowd {
	int go[2], up[2], hold[2];
	int n;
	pid_t pids[CROWD_MAX];
};

static inline void crowd_fork(struct crowd *c, int n, const struct vr_join_opts *o,
                              const unsigned char uuid[VR_UUID_LEN], uint64_t bytes)
{
	ASSERT(n <= CROWD_MAX);
	ASSERT_EQ(pipe(c->go), 0);
	ASSERT_EQ(pipe(c->up), 0);
	ASSERT_EQ(pipe(c->hold), 0);
	c->n = n;
	for (int i = 0; i < n; i++) {
		c->pids[i] = fork();
		ASSERT(c->pids[i] >= 0);
		if (c->pids[i] != 0)
			continue;
		close(c->go[1]);
		close(c->up[0]);
		close(c->hold[1]);
		char b, err[256] = "";
		if (read(c->go[0], &b, 1) != 0)
			_exit(3);
		vr_member *m = NULL;
		int rc = vr_join(o, &m, NULL, err, sizeof(err));
		int32_t slot = -1;
		if (rc == 0 && vr_device(m, uuid, 1u << 30, NULL) == 0 &&
		    vr_reserve(m, 0, bytes, NULL) == 0)
			slot = vr_slot_index(m);
		else
			fprintf(stderr, "member %d: join %d: %s\n", i, rc, err);
		if (write(c->up[1], &slot, sizeof(slot)) != (ssize_t)sizeof(slot))
			_exit(3);
		while (read(c->hold[0], &b, 1) > 0) /* until crowd_release */
			;
		vr_leave(m);
		_exit(slot >= 0 ? 0 : 2);
	}
	close(c->go[0]);
	close(c->up[1]);
	close(c->hold[0]);
}

/* Lets them all join at once. */
static inline void crowd_go(struct crowd *c)
{
	close(c->go[1]);
}

/* The next member's report: its slot index, or -1. */
static inline int32_t crowd_slot(struct crowd *c)
{
	int32_t slot = -1;
	ASSERT_EQ(read(c->up[0], &slot, sizeof(slot)), (ssize_t)sizeof(slot));
	return slot;
}

/* Lets them leave, and waits for each: all exit 0. */
static inline void crowd_release(struct crowd *c)
{
	close(c->hold[1]);
	close(c->up[0]);
	for (int i = 0; i < c->n; i++) {
		int st;
		ASSERT_EQ(waitpid(c->pids[i], &st, 0), c->pids[i]);
		ASSERT(WIFEXITED(st));
		ASSERT_EQ(WEXITSTATUS(st), 0);
	}
}

#endif /* VRAMCTL_REGTEST_H */
