/*
 * test_memfd.c - a group's books in a sealed memfd when no System V
 * segment can be made (issue 29: another user who fills the kernel's table
 * of segments, kernel.shmmni, made every `vramctl run --group` fail and
 * split library-only jobs into per-process caps). VRAMCTL_TEST_SHM_ENOSPC=1
 * makes every new group's shmget fail with ENOSPC; then members of other
 * processes join the same books (one cap, not two), through a live
 * member's descriptor: after the first member left, after one was killed,
 * and a crowd at once; a monitor lists them; the memfd cannot be resized;
 * its descriptor is close-on-exec and goes with vr_forget. As root, in a
 * fresh IPC namespace whose table is really full, the same (`exhausted`).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/layout.h"
#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

#define CAP 1000

static const char *dir;
static const unsigned char gpu0[VR_UUID_LEN] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};

static vr_member *member(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	return join_device_or_fail(&o, gpu0, CAP);
}

static int open_door(const char *group)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.vrg", dir, group);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT(fd >= 0);
	return fd;
}

/* The door's word on where the group's books are. */
static int32_t door_shm_id(const char *group)
{
	int fd = open_door(group);
	struct vr_hdr h;
	ASSERT_EQ(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	return h.shm_id;
}

/* Where the member of slot i says its descriptor of the books is. */
static struct vr_books_ref books_ref(const char *group, int slot)
{
	struct vr_books_ref ref;
	int fd = open_door(group);
	ASSERT_EQ(pread(fd, &ref, sizeof(ref), vr_slot_books_byte((uint32_t)slot)),
	          (ssize_t)sizeof(ref));
	close(fd);
	ASSERT_EQ(ref.tag, VR_BOOKS_REF_TAG);
	return ref;
}

/* A child that joins group, reserves `want` (which must be refused, the
 * books then showing `seen` in use) and then `get`, and stays. */
static pid_t joiner(const char *group, uint64_t want, uint64_t seen, uint64_t get,
                    vr_member *forget)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		vr_forget(forget); /* as the library does after fork */
		struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
		vr_member *m = NULL;
		char err[256];
		int ok = vr_join(&o, &m, NULL, err, sizeof(err)) == 0;
		if (!ok)
			fprintf(stderr, "joiner: %s\n", err);
		uint64_t in_use = 0;
		ok = ok && vr_device(m, gpu0, CAP, NULL) == 0;
		ok =
		    ok && (!want || (vr_reserve(m, 0, want, &in_use) == -ENOSPC && in_use == seen));
		ok = ok && vr_reserve(m, 0, get, NULL) == 0;
		hold_and_report(p[1], ok);
	}
	close(p[1]);
	expect_held(p[0]);
	close(p[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, NULL, 0), pid);
}

static const struct vramctl_group *find_group(const struct vramctl_snapshot *s, const char *name)
{
	for (int i = 0; i < s->ngroups; i++)
		if (!strcmp(s->groups[i].name, name))
			return &s->groups[i];
	return NULL;
}

/* One cap for members of two processes, a monitor's view, the seals. */
static void one_cap(void)
{
	vr_member *a = member("mfd");
	ASSERT_EQ(door_shm_id("mfd"), VR_SHM_ID_MEMFD);
	ASSERT_EQ(vr_reserve(a, 0, 700, NULL), 0);
	pid_t b = joiner("mfd", 700, 700, 300, a);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(a, 0, 1, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, CAP);

	/* A monitor reads the same books: both members, one total. */
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_group *g = find_group(s, "mfd");
	ASSERT(g != NULL);
	ASSERT_EQ(g->nmembers, 2);
	ASSERT_EQ(g->ndev, 1);
	ASSERT_UEQ(g->dev[0].books_in_use, CAP);
	ASSERT_UEQ(g->dev[0].in_use, CAP);
	ASSERT_EQ(s->nerrors, 0);
	vramctl_snapshot_free(s);

	/* Sealed: nobody can shrink or grow it (no SIGBUS for a member). */
	struct vr_books_ref ref = books_ref("mfd", vr_slot_index(a));
	ASSERT_EQ(ref.pid, getpid());
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ref.fd);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT(fd >= 0);
	ASSERT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ASSERT_EQ(ftruncate(fd, 0), -1);
	ASSERT_EQ(errno, EPERM);
	ASSERT_EQ(ftruncate(fd, (off_t)VR_SEGMENT_SIZE * 2), -1);
	ASSERT_EQ(errno, EPERM);
	ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	struct stat st;
	ASSERT_EQ(fstat(fd, &st), 0);
	ASSERT_UEQ((uint64_t)st.st_size, VR_SEGMENT_SIZE);
	ASSERT_EQ(st.st_mode & 077, 0);
	close(fd);
	/* Not inherited by an exec'd program; closed by a child that forgets. */
	ASSERT(fcntl(ref.fd, F_GETFD) & FD_CLOEXEC);
	pid_t c = fork();
	ASSERT(c >= 0);
	if (c == 0) {
		vr_forget(a);
		_exit(fcntl(ref.fd, F_GETFD) == -1 && errno == EBADF ? 0 : 1);
	}
	int wst;
	ASSERT_EQ(waitpid(c, &wst, 0), c);
	ASSERT(WIFEXITED(wst));
	ASSERT_EQ(WEXITSTATUS(wst), 0);
	ASSERT(fcntl(ref.fd, F_GETFD) >= 0); /* the parent's stays */

	/* A member killed with SIGKILL is reclaimed as ever. */
	reap(b);
	ASSERT_EQ(vr_reserve(a, 0, 300, NULL), 0);
	vr_release(a, 0, 1000);

	/* The first member leaves while another lives: a late joiner still
	 * finds the same books, through the one that is left. */
	pid_t d = joiner("mfd", 0, 0, 400, a);
	vr_leave(a);
	pid_t e = joiner("mfd", 700, 400, 600, NULL);
	reap(d);
	reap(e);
	ASSERT_EQ(vr_group_remove(dir, "mfd"), 0);
}

/* Joiners at once all find the one memfd: each waits for the door's lock
 * while the one before says where its descriptor is. */
static void crowd(void)
{
	struct crowd c;
	struct vr_join_opts o = {.dir = dir, .group = "mfdcrowd", .limit_spec = "1G"};
	enum { N = 12 };
	crowd_fork(&c, N, &o, gpu0, 1u << 20);
	crowd_go(&c);
	for (int i = 0; i < N; i++)
		ASSERT(crowd_slot(&c) >= 0);
	ASSERT_EQ(door_shm_id("mfdcrowd"), VR_SHM_ID_MEMFD);
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_group *g = find_group(s, "mfdcrowd");
	ASSERT(g != NULL);
	ASSERT_EQ(g->nmembers, N);
	ASSERT_UEQ(g->dev[0].books_in_use, (uint64_t)N << 20);
	vramctl_snapshot_free(s);
	crowd_release(&c);
	ASSERT_EQ(vr_group_remove(dir, "mfdcrowd"), 0);
}

/* Run as `test_memfd exhausted`, without the knob: in an IPC namespace of
 * its own, fills the table of segments, then a group still holds one cap. */
static int exhausted(void)
{
	if (unshare(CLONE_NEWIPC) != 0)
		return 77;
	int n = 0;
	while (n < 1000000 && shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600) >= 0)
		n++;
	if (errno != ENOSPC) {
		fprintf(stderr, "shmget after %d: %s\n", n, strerror(errno));
		return 1;
	}
	fprintf(stderr, "the namespace's table is full after %d segments\n", n);
	vr_member *a = member("mfdfull");
	ASSERT_EQ(door_shm_id("mfdfull"), VR_SHM_ID_MEMFD);
	ASSERT_EQ(vr_reserve(a, 0, 700, NULL), 0);
	pid_t b = joiner("mfdfull", 700, 700, 300, a);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(a, 0, 1, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, CAP);
	reap(b);
	vr_leave(a);
	ASSERT_EQ(vr_group_remove(dir, "mfdfull"), 0);
	return 0;
}

/* Runs this test again as `argv0 mode` (with the knob when knob is set):
 * its exit status. */
static int run_self(const char *argv0, const char *mode, int knob)
{
	pid_t x = fork();
	ASSERT(x >= 0);
	if (x == 0) {
		if (knob)
			setenv("VRAMCTL_TEST_SHM_ENOSPC", "1", 1);
		execl("/proc/self/exe", argv0, mode, (char *)NULL);
		_exit(127);
	}
	int st;
	ASSERT_EQ(waitpid(x, &st, 0), x);
	ASSERT(WIFEXITED(st));
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	if (argc > 1 && !strcmp(argv[1], "exhausted"))
		return exhausted();
	if (argc > 1 && !strcmp(argv[1], "knob")) {
		one_cap();
		crowd();
		return 0;
	}

	/* Without the knob, in this namespace: a System V segment, as ever. */
	vr_member *sysv = member("mfdsysv");
	ASSERT(door_shm_id("mfdsysv") >= 0);
	vr_leave(sysv);
	ASSERT_EQ(vr_group_remove(dir, "mfdsysv"), 0);

	/* With the knob: every new group's shmget fails with ENOSPC. */
	ASSERT_EQ(run_self(argv[0], "knob", 1), 0);

	/* Real exhaustion, where it is cheap: as root, in a fresh namespace. */
	int rc = geteuid() == 0 ? run_self(argv[0], "exhausted", 0) : 77;
	if (rc == 77)
		fprintf(stderr, "not root, or no IPC namespace of our own: the real exhaustion "
		                "not tried\n");
	else
		ASSERT_EQ(rc, 0);
	printf("ok\n");
	return 0;
}
