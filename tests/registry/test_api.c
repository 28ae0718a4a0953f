/*
 * test_api.c - the registry's internal API, one behaviour at a time:
 * join/leave, devices and first-writer-wins caps, reserve/release against
 * the cap, spec_differs, fresh runs, stale groups reset, removal, the
 * default directory.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/registry/regtest.h"
#include "tests/test.h"

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {1, 2,  3,  4,  5,  6,  7,  8,
                                                 9, 10, 11, 12, 13, 14, 15, 16};
static const unsigned char uuid1[VR_UUID_LEN] = {0xaa, 2,  3,  4,  5,  6,  7,  8,
                                                 9,    10, 11, 12, 13, 14, 15, 16};

static vr_member *join(const char *group, const char *spec, int fresh, int *differs)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = spec, .fresh = fresh};
	vr_member *m = NULL;
	char err[256];
	int rc = vr_join(&o, &m, differs, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("vr_join(%s) = %d: %s", group, rc, err);
	ASSERT(m != NULL);
	return m;
}

static void test_reserve_release(void)
{
	vr_member *m = join("basic", "1G", 0, NULL);
	uint64_t cap = 0, in_use = 0;
	int d = vr_device(m, uuid0, 1000, &cap);
	ASSERT_EQ(d, 0);
	ASSERT_UEQ(cap, 1000);
	ASSERT_EQ(vr_device(m, uuid0, 5000, &cap), 0); /* same device, same index */
	ASSERT_UEQ(cap, 1000);                         /* first writer wins */
	ASSERT_EQ(vr_device(m, uuid1, UINT64_MAX, &cap), 1);
	ASSERT_UEQ(cap, UINT64_MAX);

	ASSERT_EQ(vr_reserve(m, d, 600, NULL), 0);
	ASSERT_EQ(vr_reserve(m, d, 400, NULL), 0); /* exactly the cap */
	ASSERT_EQ(vr_reserve(m, d, 1, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 1000);
	ASSERT_EQ(vr_reserve(m, d, UINT64_MAX, &in_use), -ENOSPC); /* no overflow */
	vr_usage(m, d, &in_use, &cap);
	ASSERT_UEQ(in_use, 1000);
	ASSERT_UEQ(cap, 1000);
	vr_release(m, d, 600);
	vr_usage(m, d, &in_use, NULL);
	ASSERT_UEQ(in_use, 400);
	vr_release(m, d, 5000); /* never below zero */
	vr_usage(m, d, &in_use, NULL);
	ASSERT_UEQ(in_use, 0);
	/* An uncapped device: anything up to the books' 256 TiB, never past. */
	ASSERT_EQ(vr_reserve(m, 1, 1ull << 47, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 1, UINT64_MAX / 2, NULL), -ENOSPC);

	/* Bad arguments are refused, not crashed on. */
	ASSERT_EQ(vr_reserve(m, 7, 1, NULL), -EINVAL);
	ASSERT_EQ(vr_reserve(m, -1, 1, NULL), -EINVAL);
	ASSERT_EQ(vr_reserve(NULL, 0, 1, NULL), -EINVAL);
	vr_release(NULL, 0, 1);
	vr_usage(NULL, 0, &in_use, &cap);
	ASSERT_UEQ(in_use, 0);
	ASSERT_UEQ(cap, UINT64_MAX);

	/* A second member shares the cap; its leave returns its bytes. */
	int differs = -1;
	vr_member *m2 = join("basic", "1G", 0, &differs);
	ASSERT_EQ(differs, 0);
	ASSERT_NE(vr_slot_index(m2), vr_slot_index(m));
	ASSERT_EQ(vr_device(m2, uuid0, 99, &cap), 0);
	ASSERT_UEQ(cap, 1000);
	ASSERT_EQ(vr_reserve(m2, 0, 700, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 301, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 700);
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(m, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 700);
	ASSERT_UEQ(s.slots_sum, 700);
	ASSERT_UEQ(s.peak, 1000);
	ASSERT_EQ(s.used_slots, 2);
	vr_leave(m2);
	ASSERT_EQ(vr_reserve(m, 0, 1000, NULL), 0);
	vr_release(m, 0, 1000);

	/* A joiner with another spec is told; the group's cap stays. */
	vr_member *m3 = join("basic", "2G", 0, &differs);
	ASSERT_EQ(differs, 1);
	ASSERT_EQ(vr_device(m3, uuid0, 2000, &cap), 0);
	ASSERT_UEQ(cap, 1000);
	vr_leave(m3);
	vr_leave(m);
	vr_leave(NULL);

	/* A spec longer than the room for it is compared as stored. */
	char longspec[300];
	memset(longspec, '7', sizeof(longspec) - 1);
	longspec[sizeof(longspec) - 1] = '\0';
	vr_member *l1 = join("longspec", longspec, 0, &differs);
	vr_member *l2 = join("longspec", longspec, 0, &differs);
	ASSERT_EQ(differs, 0);
	vr_leave(l2);
	vr_leave(l1);
	vr_forget(NULL);
}

/*
 * A member that dies without leaving: its bytes come back to the group once
 * its process is reaped. With `zombie`, it is first seen dead (its liveness
 * lock is gone with its files) but not reaped (its parent has not waited):
 * the driver may still hold its memory, so its bytes stay held until then.
 */
static void dead_member(const char *group, int zombie)
{
	vr_member *m = join(group, "1000", 0, NULL);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		vr_forget(m); /* as the library does after fork */
		vr_member *c = join(group, "1000", 0, NULL);
		int d = vr_device(c, uuid0, 1, NULL);
		hold_and_report(p[1], vr_reserve(c, d, 800, NULL) == 0);
	}
	expect_held(p[0]);
	uint64_t in_use;
	ASSERT_EQ(vr_reserve(m, 0, 300, &in_use), -ENOSPC); /* the child is alive */
	ASSERT_UEQ(in_use, 800);
	kill(pid, SIGKILL);
	if (zombie) {
		siginfo_t si;
		ASSERT_EQ(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
		ASSERT_EQ(vr_reserve(m, 0, 300, &in_use), -ENOSPC);
		ASSERT_UEQ(in_use, 800);
		ASSERT_EQ(vr_reclaim(m), 0);
	}
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	/* Reclaimed before the denial would be made. */
	ASSERT_EQ(vr_reserve(m, 0, 300, NULL), 0);
	vr_usage(m, 0, &in_use, NULL);
	ASSERT_UEQ(in_use, 300);
	vr_leave(m);
	close(p[0]);
	close(p[1]);
}

/* A child that forgets its inherited membership leaves the parent's slot
 * alone: the parent is still alive to everyone else. */
static void test_forget_keeps_parent(void)
{
	vr_member *m = join("forget", "1000", 0, NULL);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 500, NULL), 0);
	pid_t pid = fork();
	if (pid == 0) {
		vr_forget(m);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	vr_member *m2 = join("forget", "1000", 0, NULL);
	ASSERT_EQ(vr_reclaim(m2), 0);
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(m2, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 500);
	vr_leave(m2);
	vr_leave(m);
}

/* A group whose members are all gone starts afresh: the stale cap of an
 * earlier run never applies. A fresh run refuses a group with live members. */
static void test_stale_and_fresh(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		vr_member *c = join("stale", "1000", 1, NULL);
		int d = vr_device(c, uuid0, 1000, NULL);
		if (vr_reserve(c, d, 900, NULL) != 0)
			_exit(2);
		_exit(0); /* dies a member, without leaving */
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_EQ(WEXITSTATUS(st), 0);
	int differs = -1;
	vr_member *m = join("stale", "5000", 0, &differs);
	ASSERT_EQ(differs, 0); /* the group is ours now */
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(m, uuid0, 5000, &cap), 0);
	ASSERT_UEQ(cap, 5000);
	uint64_t in_use = 1;
	vr_usage(m, 0, &in_use, NULL);
	ASSERT_UEQ(in_use, 0);

	struct vr_join_opts o = {.dir = dir, .group = "stale", .limit_spec = "5000", .fresh = 1};
	vr_member *f = NULL;
	char err[256] = "";
	ASSERT_EQ(vr_join(&o, &f, NULL, err, sizeof(err)), -EEXIST);
	ASSERT(f == NULL);
	ASSERT(strstr(err, "stale") != NULL);
	vr_leave(m);
	/* Now nobody is alive: a fresh join resets. */
	f = join("stale", "7000", 1, &differs);
	ASSERT_EQ(differs, 0);
	ASSERT_EQ(vr_device(f, uuid0, 7000, &cap), 0);
	ASSERT_UEQ(cap, 7000);
	vr_leave(f);
}

static void test_names_remove_default_dir(void)
{
	struct vr_join_opts o = {.dir = dir, .group = "../evil", .limit_spec = ""};
	vr_member *m = NULL;
	char err[256] = "";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), -EINVAL);
	ASSERT(strstr(err, "group name") != NULL);
	o.group = ".hidden";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), -EINVAL);
	o.group = "";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), -EINVAL);
	o.group = "a123456789b123456789c123456789d123456789e123456789f123456789g1234";
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), -EINVAL); /* 65 characters */
	o.group = NULL;
	ASSERT_EQ(vr_join(&o, &m, NULL, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(vr_join(NULL, &m, NULL, err, sizeof(err)), -EINVAL);

	m = join("gone", "", 0, NULL);
	char path[8200];
	snprintf(path, sizeof(path), "%s/gone.vrg", dir);
	struct stat st;
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(vr_group_remove(dir, "gone"), 0);
	ASSERT_EQ(stat(path, &st), -1);
	ASSERT_EQ(vr_group_remove(dir, "gone"), -ENOENT);
	ASSERT_EQ(vr_group_remove(dir, "../x"), -EINVAL);
	/* Members still attached keep working on their mapping. */
	ASSERT_EQ(vr_device(m, uuid0, 10, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 10, NULL), 0);
	vr_leave(m);

	char buf[4096];
	setenv("VRAMCTL_REGISTRY_DIR", "/x/y", 1);
	ASSERT_EQ(vr_default_dir(buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/x/y");
	ASSERT_EQ(vr_default_dir(buf, 3), -ENAMETOOLONG);
	unsetenv("VRAMCTL_REGISTRY_DIR");
	setenv("XDG_RUNTIME_DIR", "/run/user/5", 1);
	ASSERT_EQ(vr_default_dir(buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "/run/user/5/vramctl");
	unsetenv("XDG_RUNTIME_DIR");
	ASSERT_EQ(vr_default_dir(buf, sizeof(buf)), 0);
	char want[64];
	snprintf(want, sizeof(want), "/tmp/vramctl-%u", (unsigned)geteuid());
	ASSERT_STR_EQ(buf, want);
	setenv("VRAMCTL_REGISTRY_DIR", dir, 1);

	/* The default directory is used when none is given, and created 0700
	 * whatever the umask. */
	char sub[4096];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	setenv("VRAMCTL_REGISTRY_DIR", sub, 1);
	mode_t old = umask(0777);
	struct vr_join_opts o2 = {.group = "dflt", .limit_spec = "1G"};
	ASSERT_EQ(vr_join(&o2, &m, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(umask(old), 0777); /* untouched */
	ASSERT_EQ(stat(sub, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0700);
	snprintf(path, sizeof(path), "%s/dflt.vrg", sub);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	vr_leave(m);
	ASSERT_EQ(vr_group_remove(NULL, "dflt"), 0);
	setenv("VRAMCTL_REGISTRY_DIR", dir, 1);
}

/* Counts this process's descriptors whose target contains text. */
static int count_fds(const char *text, int close_them)
{
	int n = 0;
	for (int fd = 3; fd < 1024; fd++) {
		char link[64], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strstr(target, text)) {
			n++;
			if (close_them)
				close(fd);
		}
	}
	return n;
}

/* The program closes our descriptor behind our back. The member's mapping
 * still references the open file description, so its liveness lock stays:
 * nobody reclaims a live member's slot. And at leave we do not close a
 * descriptor number that now belongs to someone else. */
static void test_fd_closed_by_program(void)
{
	vr_member *keeper = join("stale-fd", "1000", 0, NULL); /* door under a temp name */
	ASSERT_EQ(vr_device(keeper, uuid0, 1000, NULL), 0);
	vr_member *m = join("stale-fd", "1000", 0, NULL);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 100, NULL), 0);
	ASSERT_EQ(count_fds("/stale-fd.vrg", 1), 1);          /* m's, closed */
	vr_member *other = join("stale-fd", "1000", 0, NULL); /* may reuse the number */
	ASSERT_EQ(vr_reclaim(other), 0);
	ASSERT_EQ(vr_reserve(m, 0, 10, NULL), 0);
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(other, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 110);
	ASSERT_EQ(s.used_slots, 3);
	vr_leave(m);
	ASSERT_EQ(count_fds("/stale-fd.vrg", 0), 1); /* other's is intact */
	ASSERT_EQ(vr_sample(other, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 0);
	ASSERT_EQ(s.used_slots, 2);
	vr_leave(other);
	vr_leave(keeper);
}

/*
 * The slots in use stay compact: every audit, reclaim and reader walks the
 * slots up to the highest one ever used (and the pages they span), so a
 * joiner takes a slot among those used before when one is free, not the
 * next of all 1,024 in turn. 100 joins and leaves next to one member that
 * stays use two slots; a group nobody is alive in starts again at slot 0.
 */
static void test_slots_compact(void)
{
	vr_member *keeper = join("compact", "1000", 0, NULL);
	ASSERT_EQ(vr_slot_index(keeper), 0);
	for (int i = 0; i < 100; i++) {
		vr_member *m = join("compact", "1000", 0, NULL);
		ASSERT_LT(vr_slot_index(m), 2);
		vr_leave(m);
	}
	vr_leave(keeper);
	vr_member *again = join("compact", "1000", 0, NULL);
	ASSERT_EQ(vr_slot_index(again), 0);
	vr_leave(again);
}

/*
 * A join gives back the dead among the members after its own slot (a
 * bounded look, VR_RECLAIM_NEAR); a denial still looks at all of them:
 * 40 members die holding 20 bytes each under a cap of 1,000, and a
 * request that fits only once every one of them is given back succeeds.
 */
static void test_many_dead_reclaimed_before_denial(void)
{
	vr_member *m = join("manydead", "1000", 0, NULL);
	ASSERT_EQ(vr_device(m, uuid0, 1000, NULL), 0);
	pid_t kids[40];
	for (int i = 0; i < 40; i++) {
		int p[2];
		ASSERT_EQ(pipe(p), 0);
		kids[i] = fork();
		ASSERT(kids[i] >= 0);
		if (kids[i] == 0) {
			vr_forget(m);
			vr_member *c = join("manydead", "1000", 0, NULL);
			int d = vr_device(c, uuid0, 1000, NULL);
			char ok = d == 0 && vr_reserve(c, d, 20, NULL) == 0;
			if (write(p[1], &ok, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		char ok = 0;
		ASSERT_EQ(read(p[0], &ok, 1), 1);
		ASSERT_EQ(ok, 1);
		close(p[0]);
		close(p[1]);
	}
	for (int i = 0; i < 40; i++) {
		kill(kids[i], SIGKILL);
		ASSERT_EQ(waitpid(kids[i], NULL, 0), kids[i]);
	}
	uint64_t in_use;
	ASSERT_EQ(vr_reserve(m, 0, 1000, &in_use), 0);
	vr_usage(m, 0, &in_use, NULL);
	ASSERT_UEQ(in_use, 1000);
	vr_leave(m);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	test_reserve_release();
	dead_member("dead", 0);
	dead_member("zombie", 1);
	test_forget_keeps_parent();
	test_stale_and_fresh();
	test_names_remove_default_dir();
	test_fd_closed_by_program();
	test_slots_compact();
	test_many_dead_reclaimed_before_denial();
	printf("ok\n");
	return 0;
}
