/*
 * test_teardown.c - a reaped member whose process NVML still lists on a
 * GPU keeps its bytes (registry/held.c), asked through a fake probe:
 *   held:    refused while the probe says "listed", also across a join
 *            (the newcomer takes another slot, the books keep the bytes);
 *            given back once it says "not listed";
 *   ghosts:  the dead member was the group's only one: its books went
 *            with it, and the joiner that starts the group afresh keeps it
 *            as a ghost (from the door's records), which every member
 *            hands to NVML's check of the card (vr_ghosts) until the bound
 *            (#37: 932 + 632 MiB on the card under a 1 GiB cap); a live
 *            member, or one of the new books, is none;
 *   unknown: the probe cannot tell: given back at once (reaped = gone);
 *   none:    no probe: given back at once;
 *   nothing: a dead member that held no bytes: the probe is not asked;
 *   bound:   "listed" for good: given back after the bound
 *            (VRAMCTL_TEST_TEARDOWN_BOUND_MS, in a re-executed copy), with
 *            one line through the probe.
 * Waits for the probe's answer to age out of the cache have generous limits.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {1, 2,  3,  4,  5,  6,  7,  8,
                                                 9, 10, 11, 12, 13, 14, 15, 16};

static _Atomic int answer; /* what the fake NVML says of the victim */
static _Atomic int asked;
static _Atomic int32_t victim;
static _Atomic int nsaid;
static char said[512];

static int listed(int32_t pid, const unsigned char uuid[VR_UUID_LEN])
{
	asked++;
	if (pid != victim || memcmp(uuid, uuid0, VR_UUID_LEN) != 0)
		return 0;
	return answer;
}

static void say(const char *line)
{
	nsaid++;
	snprintf(said, sizeof(said), "%s", line);
}

static const struct vr_gpu_probe probe = {.listed = listed, .say = say};

static vr_member *join(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	vr_member *m = join_or_fail(&o);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	return m;
}

/* A member of group that reserves bytes, then is killed and reaped. */
static void dead_member(const char *group, uint64_t bytes)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		vr_member *c = join(group);
		hold_and_report(p[1], bytes == 0 || vr_reserve(c, 0, bytes, NULL) == 0);
	}
	expect_held(p[0]);
	victim = pid;
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	close(p[0]);
	close(p[1]);
}

static uint64_t group_in_use(vr_member *m)
{
	uint64_t in_use = 0;
	vr_usage(m, 0, &in_use, NULL);
	return in_use;
}

/* Reserves bytes until granted, for up to 20 s. */
static int reserve_until_granted(vr_member *m, uint64_t bytes)
{
	for (int i = 0; i < 400; i++) {
		int rc = vr_reserve(m, 0, bytes, NULL);
		if (rc == 0)
			return 1;
		ASSERT_EQ(rc, -ENOSPC);
		nanosleep(&(struct timespec){0, 50000000L}, NULL);
	}
	return 0;
}

static void test_held(void)
{
	vr_member *m = join("held");
	answer = 1;
	dead_member("held", 800);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, 300, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 800);
	ASSERT_EQ(vr_reclaim(m), 0);
	ASSERT(asked > 0);
	/* A newcomer neither takes the slot nor gives its bytes back. */
	vr_member *m2 = join("held");
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(m2, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 800);
	ASSERT_EQ(s.used_slots, 3);
	vr_leave(m2);
	answer = 0; /* the driver is done with it */
	ASSERT(reserve_until_granted(m, 300));
	ASSERT_UEQ(group_in_use(m), 300);
	ASSERT_EQ(nsaid, 0);
	vr_leave(m);
}

static void test_ghosts(void)
{
	int32_t pids[16];
	dead_member("alone", 800);
	vr_member *m = join("alone");
	ASSERT_EQ(vr_ghosts(m, pids, 16), 1);
	ASSERT_EQ(pids[0], (int32_t)victim);
	/* A later joiner of the new books sees it too; the two live members
	 * are none, nor is the member that died in the new books (the books
	 * keep it: test_held). */
	vr_member *m2 = join("alone");
	ASSERT_EQ(vr_ghosts(m2, pids, 16), 1);
	ASSERT_EQ(pids[0], (int32_t)victim);
	dead_member("alone", 100);
	ASSERT_EQ(vr_ghosts(m2, pids, 16), 1);
	vr_leave(m2);
	vr_leave(m);
	/* A group whose last member left afresh: nothing from before. */
	vr_member *m3 = join("alone");
	ASSERT_EQ(vr_ghosts(m3, pids, 16), 1); /* the one that died in them */
	vr_leave(m3);
}

/* Given back at once: reserved without waiting for anything. */
static void test_given_back_at_once(const char *group, int ans)
{
	vr_member *m = join(group);
	answer = ans;
	dead_member(group, 800);
	ASSERT_EQ(vr_reserve(m, 0, 300, NULL), 0);
	ASSERT_UEQ(group_in_use(m), 300);
	vr_leave(m);
}

static void test_nothing_held(void)
{
	vr_member *m = join("nothing");
	answer = 1;
	dead_member("nothing", 0);
	int before = asked;
	ASSERT_EQ(vr_reclaim(m), 1);
	ASSERT_EQ(asked, before);
	vr_leave(m);
}

static int test_bound(void)
{
	vr_gpu_probe_set(&probe);
	vr_member *m = join("bound");
	answer = 1;
	dead_member("bound", 800);
	ASSERT_EQ(vr_reserve(m, 0, 300, NULL), -ENOSPC);
	ASSERT(reserve_until_granted(m, 300));
	ASSERT_EQ(nsaid, 1);
	ASSERT(strstr(said, "still listed by NVML") != NULL);
	char pid[32];
	snprintf(pid, sizeof(pid), "PID %d", (int)victim);
	ASSERT(strstr(said, pid) != NULL);
	ASSERT_EQ(vr_reclaim(m), 0);
	ASSERT_EQ(nsaid, 1);
	vr_leave(m);
	/* Ghosts are counted no longer than the bound, from the group's start
	 * (known to the second: the bound rounded up, and one more). */
	int32_t pids[16];
	dead_member("bound-ghost", 800);
	m = join("bound-ghost");
	ASSERT_EQ(vr_ghosts(m, pids, 16), 1);
	nanosleep(&(struct timespec){2, 200000000L}, NULL);
	ASSERT_EQ(vr_ghosts(m, pids, 16), 0);
	vr_leave(m);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	if (argc > 1 && !strcmp(argv[1], "bound"))
		return test_bound();

	vr_gpu_probe_set(&probe);
	test_held();
	test_ghosts();
	test_given_back_at_once("unknown", -1);
	test_nothing_held();
	vr_gpu_probe_set(NULL);
	test_given_back_at_once("none", 1);

	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		setenv("VRAMCTL_TEST_TEARDOWN_BOUND_MS", "300", 1);
		execl("/proc/self/exe", argv[0], "bound", (char *)NULL);
		_exit(127);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("ok\n");
	return 0;
}
