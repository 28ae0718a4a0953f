/*
 * devtest.h - what the device book's tests share (test_devbook.c,
 * test_devbook_damage.c): a directory of books of their own, processes
 * simulated by opens of their own (liveness is per open file description)
 * or forked, and children that never outlive the test.
 */
#ifndef VRAMCTL_DEVTEST_H
#define VRAMCTL_DEVTEST_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/devbook.h"
#include "tests/test.h"

#define CAP 1000u

static char dir[4096];
static int life[2]; /* the test's write end: children end when it does */

/* A child that stays until it is killed, or until the test ends however it
 * ends (a failed assertion leaves no child behind). */
static inline _Noreturn void live_until_the_end(void)
{
	char c;
	close(life[1]);
	while (read(life[0], &c, 1) > 0)
		;
	_exit(0);
}

static inline void uuid_of(int n, unsigned char u[16])
{
	for (int i = 0; i < 16; i++)
		u[i] = (unsigned char)(0xa0 + i);
	u[15] = (unsigned char)n;
}

static inline struct vr_devbook *open_or_fail(const unsigned char u[16])
{
	struct vr_devbook *b = NULL;
	char err[512] = "";
	int rc = vr_devbook_open(dir, u, CAP, &b, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("vr_devbook_open = %d: %s", rc, err);
	return b;
}

static inline struct vr_devbook_who who_of(const char *group, uint64_t key, int32_t pid, uint64_t g)
{
	struct vr_devbook_who w = {.group = group,
	                           .group_key = key,
	                           .uid = (uint32_t)geteuid(),
	                           .pid = pid,
	                           .guarantee = g};
	return w;
}

/* A process of group (key) with guarantee g: its own open and line. */
static inline struct vr_devbook *member(const unsigned char u[16], const char *group, uint64_t key,
                                        int32_t pid, uint64_t g)
{
	struct vr_devbook *b = open_or_fail(u);
	struct vr_devbook_who w = who_of(group, key, pid, g);
	char err[512] = "";
	int rc = vr_devbook_join(b, &w, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("vr_devbook_join(%s) = %d: %s", group, rc, err);
	return b;
}

static inline struct vr_devbook_view view_of(const unsigned char u[16])
{
	struct vr_devbook_view v;
	ASSERT_EQ(vr_devbook_read(dir, u, &v), 0);
	return v;
}

static inline uint64_t word(const struct vr_devbook *b)
{
	return atomic_load_explicit(vr_devbook_guaranteed_word(b), memory_order_relaxed);
}

static inline uint64_t unused_others(struct vr_devbook *b, struct vr_devbook_holder *top)
{
	ASSERT_EQ(vr_devbook_lock(b), 0);
	uint64_t u = vr_devbook_unused_others(b, top);
	vr_devbook_unlock(b);
	return u;
}

/* A forked process that opens u, joins as said, reports, and waits to be
 * killed. */
static inline pid_t child_member(const unsigned char u[16], const char *group, uint64_t key,
                                 uint64_t g)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	fflush(stdout);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		struct vr_devbook *b = NULL;
		char err[256];
		struct vr_devbook_who w = who_of(group, key, getpid(), g);
		char ok = vr_devbook_open(dir, u, CAP, &b, err, sizeof(err)) == 0 &&
		                  vr_devbook_join(b, &w, err, sizeof(err)) == 0
		              ? 'y'
		              : 'n';
		if (ok == 'y')
			vr_devbook_held(b, 10);
		if (write(p[1], &ok, 1) != 1)
			_exit(2);
		live_until_the_end();
	}
	close(p[1]);
	char ok = 0;
	ASSERT_EQ(read(p[0], &ok, 1), 1);
	ASSERT_EQ(ok, 'y');
	close(p[0]);
	return pid;
}

static inline void kill_reap(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
}

/* The test's own directory of books (VRAMCTL_DEVICE_DIR, under $TMPDIR). */
static inline void devtest_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/devbook-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ASSERT(mkdtemp(dir) != NULL);
	ASSERT_EQ(pipe(life), 0);
	setenv("VRAMCTL_DEVICE_DIR", dir, 1);
}

#endif /* VRAMCTL_DEVTEST_H */
