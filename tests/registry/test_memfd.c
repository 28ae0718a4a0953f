/*
 * test_memfd.c - a group's books in a sealed memfd (issues 29 and 37):
 * members of several processes join the same books (one cap, not two),
 * through the group's socket (handover.c) or a live member's descriptor
 * in /proc: after the first member left, after one was killed, a crowd at
 * once; a monitor lists them; the memfd cannot be resized; its descriptor
 * is close-on-exec and goes with vr_forget.
 *
 *   closed: a member whose program closes all its descriptors after its
 *     first allocation (daemons, subprocess helpers) still hands the books
 *     over: the next joiner is refused past the cap, and a monitor lists
 *     both in one group. Issue 37 (item 6): through /proc, the only way
 *     then, the next joiner split the group (600 + 600 under 1,000) and the
 *     monitor listed neither.
 *   nosocket: the socket's name removed: a joiner still finds the books
 *     (through /proc), and a member makes the socket again.
 *   fsize: under a file size limit below the books' size no memfd can be
 *     made without SIGXFSZ: the books are a System V segment, still one
 *     cap for two members.
 *   exhausted: as root, in a fresh IPC namespace whose table of System V
 *     segments is full, the same one cap.
 *   shared: serving threads in their programs' descriptor tables
 *     (VRAMCTL_TEST_SERVE_SHARED=1, as where the kernel gives them none of
 *     their own): the books are handed over all the same; a member whose
 *     program closes its descriptors then hands nothing over (its thread
 *     ends), and the next joiner is refused with a message, never a second
 *     group.
 *
 * VRAMCTL_TEST_SHM_ENOSPC=1 is set for layout version 8, whose books were a
 * System V segment unless it was set; this version has no such knob.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/handover.h"
#include "registry/layout.h"
#include "registry/util.h"
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

/* A child that joins group, reserves `get`, then closes every descriptor
 * it has from 3 up (but the pipe it reports on), as a program that closes
 * what it does not know after its first allocation; and stays. */
static pid_t closer(const char *group, uint64_t get)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		vr_member *m = member(group);
		int ok = vr_reserve(m, 0, get, NULL) == 0;
		if (p[1] > 3)
			ok = ok && close_range(3, (unsigned)p[1] - 1, 0) == 0;
		ok = ok && close_range((unsigned)p[1] + 1, ~0u, 0) == 0;
		hold_and_report(p[1], ok);
	}
	close(p[1]);
	expect_held(p[0]);
	close(p[0]);
	return pid;
}

/* How many of pid's descriptors name a memfd of books. */
static int memfds_open(pid_t pid)
{
	char path[64], link[128];
	int n = 0;
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		ssize_t k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			n += strstr(link, "memfd:vramctl-books") != NULL;
		}
	}
	return n;
}

/* Issue 37, item 6: the member's program closed its descriptors. */
static void closed(void)
{
	pid_t a = closer("mfdclosed", 600);
	ASSERT_EQ(door_shm_id("mfdclosed"), VR_SHM_ID_MEMFD);
	ASSERT_EQ(memfds_open(a), 0); /* nothing left to open through /proc */
	vr_member *b = member("mfdclosed");
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(b, 0, 600, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 600);
	ASSERT_EQ(vr_reserve(b, 0, 400, NULL), 0);

	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	const struct vramctl_group *g = find_group(s, "mfdclosed");
	ASSERT(g != NULL);
	ASSERT_EQ(g->nmembers, 2);
	ASSERT_UEQ(g->dev[0].books_in_use, CAP);
	ASSERT_EQ(s->nerrors, 0);
	vramctl_snapshot_free(s);
	reap(a);
	vr_release(b, 0, 400);
	vr_leave(b);
	ASSERT_EQ(vr_group_remove(dir, "mfdclosed"), 0);
}

/* The socket's name removed: a joiner finds the books through /proc, and a
 * member makes the socket again (within its 2 s look). */
static void nosocket(void)
{
	vr_member *a = member("mfdnosock");
	ASSERT_EQ(vr_reserve(a, 0, 700, NULL), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s/.mfdnosock.vrg.sock", dir);
	ASSERT_EQ(unlink(path), 0);
	pid_t b = joiner("mfdnosock", 700, 700, 300, a);
	struct stat st;
	int back = 0;
	for (int i = 0; i < 200 && !back; i++) {
		back = lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
		if (!back)
			usleep(50000);
	}
	ASSERT(back);
	/* It answers with these books. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT(dfd >= 0);
	struct vr_ho_fds f;
	ASSERT_EQ(vr_ho_fetch(dfd, dir, "mfdnosock", geteuid(), vr_now_ns() + 2000000000ull, &f),
	          0);
	struct vr_books_ref ref = books_ref("mfdnosock", vr_slot_index(a));
	struct stat mine, theirs;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ref.fd);
	ASSERT_EQ(stat(path, &mine), 0);
	ASSERT_EQ(fstat(f.books, &theirs), 0);
	ASSERT_UEQ(theirs.st_ino, mine.st_ino);
	vr_ho_close(&f);
	close(dfd);
	reap(b);
	vr_release(a, 0, 700);
	vr_leave(a);
	ASSERT_EQ(vr_group_remove(dir, "mfdnosock"), 0);
}

/* Under a file size limit below the books' size: a System V segment, one
 * cap for two members, and no SIGXFSZ. In a child (the limit stays there). */
static void fsize(void)
{
	pid_t x = fork();
	ASSERT(x >= 0);
	if (x == 0) {
		struct rlimit rl;
		ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &rl), 0);
		rl.rlim_cur = 1 << 20;
		ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
		vr_member *a = member("mfdfsize");
		ASSERT(door_shm_id("mfdfsize") >= 0);
		ASSERT_EQ(vr_reserve(a, 0, 700, NULL), 0);
		pid_t b = joiner("mfdfsize", 700, 700, 300, a);
		reap(b);
		vr_leave(a);
		ASSERT_EQ(vr_group_remove(dir, "mfdfsize"), 0);
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(x, &st, 0), x);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

/* Run as `test_memfd exhausted`: in an IPC namespace of its own, fills the
 * table of System V segments, then a group still holds one cap. */
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

/* The number of pid's threads that answer on a group's socket (serve.c
 * names them; sanitizers' runtimes have threads of their own). */
static int serving_threads(pid_t pid)
{
	char path[96], comm[32];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	ASSERT(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/comm", (int)pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "vramctl-books", 13))
			n++;
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

/* Run as `test_memfd shared`, with VRAMCTL_TEST_SERVE_SHARED=1. */
static int shared(void)
{
	/* Handed over by a thread in its program's table. */
	vr_member *a = member("mfdshared");
	ASSERT_EQ(vr_reserve(a, 0, 700, NULL), 0);
	pid_t b = joiner("mfdshared", 700, 700, 300, a);
	reap(b);
	vr_release(a, 0, 700);
	vr_leave(a);

	/* Its program closes all its descriptors: the thread ends, touching
	 * none of them, and nobody hands the books over. */
	pid_t c = closer("mfdshared2", 600);
	for (int i = 0; i < 200 && serving_threads(c) > 0; i++)
		usleep(50000);
	ASSERT_EQ(serving_threads(c), 0);
	struct vr_join_opts o = {.dir = dir, .group = "mfdshared2", .limit_spec = "1000"};
	vr_member *d = NULL;
	char err[256];
	ASSERT_EQ(vr_join(&o, &d, NULL, err, sizeof(err)), -EBADMSG);
	printf("refused: %s\n", err);
	ASSERT(strstr(err, "live members") != NULL);
	reap(c);
	ASSERT_EQ(vr_group_remove(dir, "mfdshared"), 0);
	ASSERT_EQ(vr_group_remove(dir, "mfdshared2"), 0);
	return 0;
}

/* Runs this test again as `argv0 mode`: its exit status. */
static int run_self(const char *argv0, const char *mode)
{
	pid_t x = fork();
	ASSERT(x >= 0);
	if (x == 0) {
		if (!strcmp(mode, "shared"))
			setenv("VRAMCTL_TEST_SERVE_SHARED", "1", 1);
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
	setenv("VRAMCTL_TEST_SHM_ENOSPC", "1", 1); /* layout 8's: see above */
	if (argc > 1 && !strcmp(argv[1], "exhausted"))
		return exhausted();
	if (argc > 1 && !strcmp(argv[1], "shared"))
		return shared();
	one_cap();
	crowd();
	closed();
	nosocket();
	fsize();
	ASSERT_EQ(run_self(argv[0], "shared"), 0);

	/* Real exhaustion, where it is cheap: as root, in a fresh namespace. */
	int rc = geteuid() == 0 ? run_self(argv[0], "exhausted") : 77;
	if (rc == 77)
		fprintf(stderr, "not root, or no IPC namespace of our own: the real exhaustion "
		                "not tried\n");
	else
		ASSERT_EQ(rc, 0);
	printf("ok\n");
	return 0;
}
