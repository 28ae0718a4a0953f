/*
 * test_asowner - root joins another user's books as that user's
 * (vr_join_opts.as_owner: a process of a user's job after sudo, registry/
 * jobs.h). Root finds the user's group and shares its books (one total);
 * without as_owner it refuses them; where nothing exists yet, what root
 * makes (the directory, the door, the segment) is the user's, so the
 * user's own processes join it afterwards. Needs root and the suite's user
 * vrslurm; skips without.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/registry.h"
#include "tests/registry/regtest.h"

static const unsigned char uuid[VR_UUID_LEN] = {7, 7, 7};

/* As the user, in a child: joins group in dir and reserves bytes on the
 * device (1 GiB cap); writes the result to fd and holds until fd2 closes. */
static pid_t user_member(uid_t uid, gid_t gid, const char *dir, const char *group, uint64_t bytes,
                         int out, const int hold[2])
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	close(hold[1]); /* the parent's end: its close is the child's signal */
	if (setgid(gid) != 0 || setuid(uid) != 0)
		_exit(2);
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1G"};
	vr_member *m = NULL;
	char err[256];
	int rc = vr_join(&o, &m, NULL, err, sizeof err);
	uint64_t cap = 0;
	int dev = rc == 0 ? vr_device(m, uuid, 1ull << 30, &cap) : -1;
	int got = dev >= 0 ? vr_reserve(m, dev, bytes, NULL) : -100 + rc;
	if (write(out, &got, sizeof got) != sizeof got)
		_exit(3);
	char c;
	if (read(hold[0], &c, 1) < 0)
		_exit(4);
	_exit(0);
}

int main(void)
{
	struct passwd *pw = getpwnam("vrslurm");
	if (geteuid() != 0 || !pw)
		SKIP("needs root and the user vrslurm");
	/* Where the user can reach (the test's own directory is root's 0700). */
	char base[] = "/tmp/vramctl-asowner.XXXXXX", dir[600];
	ASSERT(mkdtemp(base) != NULL);
	chmod(base, 0755);
	snprintf(dir, sizeof dir, "%s/books-%u", base, (unsigned)pw->pw_uid);

	/* 1. Root first: what it makes is the user's. */
	struct vr_join_opts o = {
	    .dir = dir, .group = "job", .limit_spec = "1G", .as_owner = 1, .owner = pw->pw_uid};
	vr_member *root = join_or_fail(&o);
	uint64_t cap = 0;
	int d = vr_device(root, uuid, 1ull << 30, &cap);
	ASSERT_GE(d, 0);
	ASSERT_EQ(vr_reserve(root, d, 600ull << 20, NULL), 0);
	struct stat st;
	ASSERT_EQ(stat(dir, &st), 0);
	ASSERT_UEQ(st.st_uid, pw->pw_uid);
	char door[700];
	snprintf(door, sizeof door, "%s/job.vrg", dir);
	ASSERT_EQ(stat(door, &st), 0);
	ASSERT_UEQ(st.st_uid, pw->pw_uid);

	/* The user's own process joins the same books: 600 + 500 > 1 GiB. */
	int res[2], hold[2], got = 0;
	ASSERT_EQ(pipe(res), 0);
	ASSERT_EQ(pipe(hold), 0);
	pid_t u = user_member(pw->pw_uid, pw->pw_gid, dir, "job", 500ull << 20, res[1], hold);
	ASSERT_EQ(read(res[0], &got, sizeof got), (ssize_t)sizeof got);
	ASSERT_EQ(got, -ENOSPC);
	close(hold[1]);
	int status;
	ASSERT_EQ(waitpid(u, &status, 0), u);
	vr_leave(root);

	/* 2. The user first; root without as_owner refuses the user's books,
	 * with it joins them. */
	ASSERT_EQ(pipe(hold), 0);
	u = user_member(pw->pw_uid, pw->pw_gid, dir, "job2", 700ull << 20, res[1], hold);
	ASSERT_EQ(read(res[0], &got, sizeof got), (ssize_t)sizeof got);
	ASSERT_EQ(got, 0);
	struct vr_join_opts plain = {.dir = dir, .group = "job2", .limit_spec = "1G"};
	vr_member *m = NULL;
	char err[256];
	ASSERT_EQ(vr_join(&plain, &m, NULL, err, sizeof err), -EPERM);
	ASSERT(strstr(err, "owned by uid"));
	o.group = "job2";
	root = join_or_fail(&o);
	d = vr_device(root, uuid, 1ull << 30, &cap);
	ASSERT_GE(d, 0);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(root, d, 400ull << 20, &in_use), -ENOSPC); /* 700 + 400 */
	ASSERT_EQ(vr_reserve(root, d, 300ull << 20, NULL), 0);
	vr_leave(root);
	close(hold[1]);
	ASSERT_EQ(waitpid(u, &status, 0), u);
	char rm[700];
	snprintf(rm, sizeof rm, "rm -rf '%s'", base);
	if (system(rm) != 0)
		printf("note: %s not removed\n", base);
	printf("ok\n");
	return 0;
}
