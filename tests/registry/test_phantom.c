/*
 * test_phantom.c - a live member's count of operations in flight that no
 * operation holds (a stray write into its slot word, or a thread that left
 * an operation through a signal handler's longjmp) is damage, found within
 * about a second, not waited for until the bound at every join and denial
 * (issue 37, item 7: each join waited 11 s while it lasted).
 *
 * The group: a member that runs (blocked in read: not stopped, not traced)
 * with one phantom operation in its slot word, and an observer (this
 * process, a member since before the damage). With the bound at 60 s
 * (VRAMCTL_TEST_LOCK_BOUND_MS), a joiner is refused (damaged books with
 * live members: it keeps its own) and says why; a second joiner finds the
 * first one's mark and is refused too; the observer's next denial finds it
 * and detaches (keeps its own books, said once). An alarm ends the test if
 * a join waits for the bound (layout version 8 did, and then joined).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"

#define CAP 1000

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

static vr_member *member(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	return join_device_or_fail(&o, uuid0, CAP);
}

/* A joiner in a child: refused, with the phantom said in its message. */
static void refused_joiner(const char *group)
{
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
		vr_member *m = NULL;
		char err[512];
		int rc = vr_join(&o, &m, NULL, err, sizeof(err));
		printf("joiner: %d: %s\n", rc, err);
		fflush(stdout);
		_exit(rc == -EBADMSG && strstr(err, "operations in flight stays while it runs")
		          ? 0
		          : 1);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	setenv("VRAMCTL_TEST_LOCK_BOUND_MS", "60000", 1); /* read at the first join */
	alarm(40);                                        /* a join that waits the bound */

	vr_member *obs = member("phantom");
	ASSERT_EQ(vr_reserve(obs, 0, 300, NULL), 0);
	int pfd[2];
	ASSERT_EQ(pipe(pfd), 0);
	pid_t live = fork();
	ASSERT(live >= 0);
	if (live == 0) {
		vr_forget(obs);
		vr_member *m = member("phantom");
		hold_and_report(pfd[1], vr_reserve(m, 0, 300, NULL) == 0);
	}
	expect_held(pfd[0]);
	uint32_t i = slot_of(obs, live);
	atomic_fetch_add(vr_slot_word(obs->hdr, i, 0), 1); /* one operation that never ends */

	refused_joiner("phantom");
	ASSERT(atomic_load(vr_phantom_at(obs->hdr, i, 0)) != 0); /* marked */
	refused_joiner("phantom");

	/* The observer's next denial audits the books: detached, said. */
	ASSERT(vr_damaged(obs) == NULL);
	uint64_t in_use = 0;
	(void)vr_reserve(obs, 0, 600, &in_use);
	const char *why = vr_damaged(obs);
	ASSERT(why != NULL);
	ASSERT(strstr(why, "operations in flight stays while it runs") != NULL);
	printf("observer: %s\n", why);

	kill(live, SIGKILL);
	int st;
	ASSERT_EQ(waitpid(live, &st, 0), live);
	vr_leave(obs);
	printf("ok\n");
	return 0;
}
