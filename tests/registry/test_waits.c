/*
 * test_waits.c - all the waits of one call share one bound, and a wait
 * past a second says what it waits for (issue 29: a join stalled twice the
 * bound, silently, when live slots showed phantom operations in flight).
 *
 * The group: an observer (this process), a live member whose slot word
 * shows an operation in flight that never ends, stopped (SIGSTOP: a
 * member that runs with such a count is damage, said at once:
 * test_phantom), and a dead member whose slot word shows one too. A join
 * then waits for the live one twice: in its audit of the books, and when
 * it reclaims the dead one. With a 2 s bound it must end within 3 s, and
 * say once that it waits.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "registry/util.h"
#include "tests/registry/regtest.h"

#define CAP      1000
#define BOUND_MS 2000

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
static _Atomic int waiting_said, other_said;

static void on_notice(const char *line)
{
	printf("notice: %s\n", line);
	if (strstr(line, "waiting for a live member"))
		atomic_fetch_add(&waiting_said, 1);
	else
		atomic_fetch_add(&other_said, 1);
}

static vr_member *member(const char *group)
{
	struct vr_join_opts o = {
	    .dir = dir, .group = group, .limit_spec = "1000", .notice = on_notice};
	vr_member *m = join_or_fail(&o);
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(m, uuid0, CAP, &cap), 0);
	ASSERT_UEQ(cap, CAP);
	return m;
}

static void phantom_join(void)
{
	vr_member *obs = member("phantom");
	int pfd[2];
	ASSERT_EQ(pipe(pfd), 0);
	pid_t live = fork();
	ASSERT(live >= 0);
	if (live == 0) {
		struct vr_join_opts o = {.dir = dir, .group = "phantom", .limit_spec = "1000"};
		vr_member *m = NULL;
		char err[256];
		int ok = vr_join(&o, &m, NULL, err, sizeof(err)) == 0 &&
		         vr_device(m, uuid0, CAP, NULL) == 0;
		hold_and_report(pfd[1], ok);
	}
	expect_held(pfd[0]);
	pid_t dead = fork();
	ASSERT(dead >= 0);
	if (dead == 0) {
		struct vr_join_opts o = {.dir = dir, .group = "phantom", .limit_spec = "1000"};
		vr_member *m = NULL;
		char err[256];
		int ok = vr_join(&o, &m, NULL, err, sizeof(err)) == 0 &&
		         vr_device(m, uuid0, CAP, NULL) == 0;
		_exit(ok ? 0 : 1); /* dies a member: its slot stays USED */
	}
	int st;
	ASSERT_EQ(waitpid(dead, &st, 0), dead);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Operations in flight that never end: one in a live member's slot,
	 * one in a dead member's. */
	atomic_fetch_add(vr_slot_word(obs->hdr, slot_of(obs, live), 0), 1);
	atomic_fetch_add(vr_slot_word(obs->hdr, slot_of(obs, dead), 0), 1);
	ASSERT_EQ(kill(live, SIGSTOP), 0);
	ASSERT_EQ(waitpid(live, &st, WUNTRACED), live);
	ASSERT(WIFSTOPPED(st));

	uint64_t t0 = vr_now_ns();
	vr_member *late = member("phantom");
	uint64_t ms = (vr_now_ns() - t0) / 1000000;
	printf("join took %llu ms (bound %d ms)\n", (unsigned long long)ms, BOUND_MS);
	ASSERT_LT(ms, BOUND_MS + BOUND_MS / 2);
	ASSERT_EQ(atomic_load(&waiting_said), 1);
	ASSERT_EQ(atomic_load(&other_said), 0);
	ASSERT(vr_damaged(late) == NULL);
	vr_leave(late);
	kill(live, SIGKILL);
	ASSERT_EQ(waitpid(live, &st, 0), live);
	vr_leave(obs);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	setenv("VRAMCTL_TEST_LOCK_BOUND_MS", "2000", 1); /* read at the first join */
	phantom_join();
	printf("ok\n");
	return 0;
}
