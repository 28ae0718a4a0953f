/*
 * test_devbook.c - the device book (src/registry/devbook.h), root's book of
 * guarantees per GPU, read by everyone without a lock (#26, #38). As root
 * (skipped otherwise), in a directory of root's; the other user is
 * vrslurm (the suite's), parts needing it skipped without it.
 *
 *   make: the book is root's, 0644, of its size; the writers' lock 0600
 *   admission: given when it fits in the card's free memory less the
 *     others' unused guarantees less the borrows in flight, refused with
 *     the numbers (-ENOSPC) otherwise and taken back; the same group joins
 *     (its first guarantee); the guaranteed word is the sum
 *   held: a member's bytes in the semaphores make its group's unused
 *     smaller; killed, the kernel takes them back (SEM_UNDO)
 *   pending: a borrower's lock on the board is counted by the others; its
 *     death drops it; anyone's locks count too (never less than a hidden
 *     one), a lock without end or too many locks: -EOVERFLOW, -E2BIG
 *   holders: an entry whose processes are gone is skipped by readers, ended
 *     by the next writer; leave ends it with its last holder; a service's
 *     entries are adopted by the next one (and ended without a live holder)
 *   a writer stopped inside a change: readers give up (-EAGAIN), never wait
 *   64 entries: the 65th is refused (-EUSERS)
 *   another user: reads the book, the held counts and the board, takes a
 *     board lock; cannot write the book or the semaphores, nor admit
 *   not used: a directory or book not root's or writable by others, a
 *     symlink; not a book: wrong size, magic; the writer replaces those
 *   the book holds no group's secret, only its hash
 * Nothing is timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/devboard.h"
#include "registry/devbook.h"
#include "registry/proc.h"
#include "tests/test.h"

#define GiB (1ull << 30)
#define CAP (16 * GiB)

static char dir[4096];
static uint64_t card_free_now = CAP; /* what NVML would say */
static int life[2];                  /* children end when the test does */

static int card_free(void *arg, uint64_t *f)
{
	(void)arg;
	*f = card_free_now;
	return 0;
}

static void uuid_of(int n, unsigned char u[16])
{
	for (int i = 0; i < 16; i++)
		u[i] = (unsigned char)(0xa0 + i);
	u[15] = (unsigned char)n;
}

static struct vr_devholder holder_of(pid_t pid)
{
	struct vr_devholder h = {.pid = pid};
	ASSERT_EQ(vr_proc_start_time(NULL, pid, &h.start), 0);
	return h;
}

/* A child that lives until killed or until the test ends. */
static pid_t sleeper(void)
{
	pid_t p = fork();
	ASSERT_GE(p, 0);
	if (p == 0) {
		char c;
		close(life[1]);
		while (read(life[0], &c, 1) > 0)
			;
		_exit(0);
	}
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static int admit(const unsigned char u[16], uint64_t ident, uint64_t g, pid_t holder,
                 uint64_t *given, char *err, size_t len)
{
	struct vr_devbook_ask a = {.capacity = CAP,
	                           .uid = 0,
	                           .ident = ident,
	                           .guarantee = g,
	                           .group = "g",
	                           .holder = holder_of(holder),
	                           .card_free = card_free};
	return vr_devbook_admit(dir, u, &a, given, err, len);
}

static struct vr_devbook *reader(const unsigned char u[16])
{
	struct vr_devbook *b = NULL;
	char err[512] = "";
	int rc = vr_devbook_open(dir, u, &b, err, sizeof err);
	if (rc != 0)
		TEST_FAILF("vr_devbook_open = %d: %s", rc, err);
	return b;
}

static uint64_t unused_seen(struct vr_devbook *b)
{
	struct vr_devbook_state st;
	ASSERT_EQ(vr_devbook_state(b, &st), 0);
	return st.unused;
}

static void test_make(void)
{
	unsigned char u[16], got[4][16];
	char err[512], path[8300], name[VR_DEVBOOK_NAME_MAX];
	uuid_of(1, u);
	struct vr_devbook *b = NULL;
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -ENOENT);
	mode_t old = umask(077);
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0);
	umask(old);
	vr__devbook_name(u, name);
	ASSERT_STR_EQ(name, "vramctl-dev-a0a1a2a3a4a5a6a7a8a9aaabacadae01");
	snprintf(path, sizeof path, "%s/%s", dir, name);
	struct stat st;
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0644);
	ASSERT_EQ(st.st_uid, 0);
	ASSERT_EQ(st.st_size, VR_DEVBOOK_SIZE);
	snprintf(path, sizeof path, "%s/%s", dir, VR_DEVBOOK_LOCKNAME);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(vr_devbook_list(dir, got, 4), 1);
	ASSERT_EQ(memcmp(got[0], u, 16), 0);
	b = reader(u);
	ASSERT_UEQ(vr_devbook_capacity(b), CAP);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 0);
	vr_devbook_close(b);
}

static void test_admit(void)
{
	unsigned char u[16];
	char err[512] = "";
	uint64_t given;
	uuid_of(2, u);
	pid_t a = sleeper(), a2 = sleeper(), c = sleeper();
	card_free_now = 10 * GiB;
	ASSERT_EQ(admit(u, 11, 6 * GiB, a, &given, err, sizeof err), 0);
	ASSERT_UEQ(given, 6 * GiB);
	/* 10 free, 6 of it a's unused: 5 does not fit, and is taken back. */
	ASSERT_EQ(admit(u, 22, 5 * GiB, c, &given, err, sizeof err), -ENOSPC);
	if (!strstr(err, "asked 5 GiB; the card (16 GiB) has 10 GiB free, other groups' unused "
	                 "guarantees are 6 GiB, borrows in flight 0 B"))
		TEST_FAILF("the refusal's numbers: %s", err);
	struct vr_devbook *b = reader(u);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 6 * GiB);
	ASSERT_EQ(admit(u, 22, 4 * GiB, c, &given, err, sizeof err), 0);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 10 * GiB);
	/* The same group, again: it joins, with its first guarantee. */
	ASSERT_EQ(admit(u, 11, 1 * GiB, a2, &given, err, sizeof err), 1);
	ASSERT_UEQ(given, 6 * GiB);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 10 * GiB);
	/* A reader of group 11 finds it; the other's unused is what it sees. */
	struct vr_devholder self = holder_of(getpid());
	ASSERT_EQ(vr_devbook_find(b, 0, 11, &self, 0), (int64_t)(6 * GiB));
	ASSERT_UEQ(unused_seen(b), 4 * GiB);
	ASSERT_UEQ(vr_devbook_own(b), 6 * GiB);
	/* a's first holder killed: its second keeps it. Both: it ends. */
	reap(a);
	ASSERT_UEQ(vr_devbook_own(b), 6 * GiB);
	reap(a2);
	struct vr_devbook *b2 = reader(u);
	ASSERT_EQ(vr_devbook_find(b2, 0, 22, &self, 0), (int64_t)(4 * GiB));
	ASSERT_UEQ(unused_seen(b2), 0); /* 11's processes are gone */
	/* The writer ends it; c's entry leaves with c's leave. */
	card_free_now = CAP;
	ASSERT_EQ(admit(u, 33, 1 * GiB, c, &given, err, sizeof err), 0);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 5 * GiB);
	ASSERT_EQ(vr_devbook_leave(dir, u, 0, 22, c), 0);
	ASSERT_EQ(vr_devbook_leave(dir, u, 0, 33, c), 0);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 0);
	ASSERT_EQ(vr_devbook_leave(dir, u, 0, 33, c), -ENOENT);
	reap(c);
	vr_devbook_close(b);
	vr_devbook_close(b2);
}

/* A child that opens the book, finds group ident (publishing) and puts
 * bytes on the card, then says so on fd `done`. */
static pid_t member_holding(const unsigned char u[16], uint64_t ident, uint64_t bytes, int pending)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t c = fork();
	ASSERT_GE(c, 0);
	if (c == 0) {
		close(p[0]);
		struct vr_devbook *b = reader(u);
		struct vr_devholder self = holder_of(getpid());
		if (pending) {
			if (vr_devbook_pending_add(b, bytes) != 0)
				_exit(2);
		} else {
			if (vr_devbook_find(b, 0, ident, &self, 1) <= 0)
				_exit(3);
			vr_devbook_held(b, (int64_t)bytes);
		}
		char ok = 'k', x;
		if (write(p[1], &ok, 1) != 1)
			_exit(4);
		close(life[1]);
		while (read(life[0], &x, 1) > 0)
			;
		_exit(0);
	}
	close(p[1]);
	char got = 0;
	ASSERT_EQ(read(p[0], &got, 1), 1);
	close(p[0]);
	return c;
}

static void test_held_pending(void)
{
	unsigned char u[16];
	char err[512] = "";
	uint64_t given, sum;
	uuid_of(3, u);
	pid_t h = sleeper();
	ASSERT_EQ(admit(u, 44, 8 * GiB, h, &given, err, sizeof err), 0);
	struct vr_devbook *b = reader(u);
	ASSERT_UEQ(unused_seen(b), 8 * GiB);
	pid_t m = member_holding(u, 44, 3 * GiB, 0);
	ASSERT_UEQ(unused_seen(b), 5 * GiB);
	pid_t m2 = member_holding(u, 44, 1 * GiB + 12345, 0); /* rounded down: never more */
	ASSERT_UEQ(unused_seen(b), 4 * GiB);
	reap(m); /* the kernel takes its 3 GiB back */
	ASSERT_UEQ(unused_seen(b), 7 * GiB);
	reap(m2);
	ASSERT_UEQ(unused_seen(b), 8 * GiB);

	/* Pending: two borrowers' locks, each counted by the others. */
	ASSERT_EQ(vr_devbook_pending_others(b, &sum), 0);
	ASSERT_UEQ(sum, 0);
	pid_t p1 = member_holding(u, 0, 3 * GiB, 1), p2 = member_holding(u, 0, 1 * GiB, 1);
	ASSERT_EQ(vr_devbook_pending_others(b, &sum), 0);
	ASSERT_UEQ(sum, 4 * GiB);
	ASSERT_EQ(vr_devbook_pending_add(b, 2 * GiB), 0); /* our own is not the others' */
	ASSERT_EQ(vr_devbook_pending_others(b, &sum), 0);
	ASSERT_UEQ(sum, 4 * GiB);
	reap(p1);
	ASSERT_EQ(vr_devbook_pending_others(b, &sum), 0);
	ASSERT_UEQ(sum, 1 * GiB);
	/* What the others see of ours, and of a lock lying over it. */
	struct vr_devbook *o = reader(u);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UEQ(sum, 3 * GiB);
	char name[VR_DEVBOOK_NAME_MAX], path[8300];
	vr__devbook_name(u, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int x = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(x, 0);
	struct flock fl = {.l_type = F_RDLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = VR_BOARD_BASE,
	                   .l_len = VR_BOARD_REGION * (VR_BOARD_REGIONS - 1)};
	ASSERT_EQ(fcntl(x, F_OFD_SETLK, &fl), 0);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UGE(sum, 3 * GiB); /* never less than what it may hide */
	fl.l_len = 0;             /* to the end, and beyond */
	ASSERT_EQ(fcntl(x, F_OFD_SETLK, &fl), 0);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), -EOVERFLOW);
	fl.l_type = F_UNLCK;
	ASSERT_EQ(fcntl(x, F_OFD_SETLK, &fl), 0);
	for (int i = 0; i < VR_BOARD_PROBES; i++) {
		struct flock one = {.l_type = F_RDLCK,
		                    .l_whence = SEEK_SET,
		                    .l_start = VR_BOARD_BASE + 7 + 2 * i,
		                    .l_len = 1};
		ASSERT_EQ(fcntl(x, F_OFD_SETLK, &one), 0);
	}
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), -E2BIG);
	close(x);
	/* Locks on the book's own bytes are no one's pending. */
	x = open(path, O_RDONLY | O_CLOEXEC);
	struct flock low = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 8192};
	ASSERT_EQ(fcntl(x, F_OFD_SETLK, &low), 0);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UEQ(sum, 3 * GiB);
	close(x);
	vr_devbook_pending_sub(b, 2 * GiB);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UEQ(sum, 1 * GiB);
	reap(p2);
	reap(h);
	vr_devbook_close(o);
	vr_devbook_close(b);
}

/* A fork child that forgets the parent's view leaves its lock alone. */
static void test_forget(void)
{
	unsigned char u[16];
	uint64_t sum;
	uuid_of(3, u);
	struct vr_devbook *b = reader(u), *o = reader(u);
	ASSERT_EQ(vr_devbook_pending_add(b, 1 * GiB), 0);
	pid_t c = fork();
	ASSERT_GE(c, 0);
	if (c == 0) {
		vr_devbook_forget(b);
		_exit(0);
	}
	ASSERT_EQ(waitpid(c, NULL, 0), c);
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UEQ(sum, 1 * GiB);
	vr_devbook_close(b); /* its lock goes with its description */
	ASSERT_EQ(vr_devbook_pending_others(o, &sum), 0);
	ASSERT_UEQ(sum, 0);
	vr_devbook_close(o);
}

static int adopted;
static void on_adopt(void *arg, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                     const struct vr_devholder *h)
{
	(void)arg, (void)uuid, (void)uid;
	ASSERT_UEQ(ident, 55);
	ASSERT_GT(h->pid, 0);
	adopted++;
}

static void test_adopt(void)
{
	unsigned char u[16];
	char err[512] = "";
	uint64_t given;
	uuid_of(4, u);
	pid_t svc = sleeper(), h = sleeper();
	struct vr_devbook_ask a = {.capacity = CAP,
	                           .ident = 55,
	                           .guarantee = 2 * GiB,
	                           .group = "adopted",
	                           .holder = holder_of(h),
	                           .manager = holder_of(svc),
	                           .card_free = card_free};
	ASSERT_EQ(vr_devbook_admit(dir, u, &a, &given, err, sizeof err), 0);
	struct vr_devholder me = holder_of(getpid());
	ASSERT_EQ(vr_devbook_adopt(dir, u, &me, on_adopt, NULL), 0); /* its service lives */
	reap(svc);
	ASSERT_EQ(vr_devbook_adopt(dir, u, &me, on_adopt, NULL), 1);
	ASSERT_EQ(adopted, 1);
	struct vr_devbook *b = reader(u);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 2 * GiB);
	/* Kept by this process now: its holder gone, it stays until ended. */
	reap(h);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 2 * GiB);
	ASSERT_EQ(vr_devbook_end(dir, u, 0, 55), 0);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 0);
	vr_devbook_close(b);
}

static struct vr_devfile *map_rw(const unsigned char u[16])
{
	char name[VR_DEVBOOK_NAME_MAX], path[8300];
	vr__devbook_name(u, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	void *p = mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT(p != MAP_FAILED);
	return p;
}

static void test_stuck_writer(void)
{
	unsigned char u[16];
	uuid_of(4, u);
	struct vr_devbook *b = reader(u);
	struct vr_devfile *f = map_rw(u);
	uint64_t s = atomic_load(&f->h.seq);
	atomic_store(&f->h.seq, s | 1); /* a writer stopped inside a change */
	struct vr_devbook_state st;
	ASSERT_EQ(vr_devbook_state(b, &st), -EAGAIN);
	/* The next writer puts it right. */
	char err[256];
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0);
	uint64_t given;
	pid_t h = sleeper();
	ASSERT_EQ(admit(u, 66, 1 * GiB, h, &given, err, sizeof err), 0);
	ASSERT_EQ(atomic_load(&f->h.seq) & 1, 0);
	ASSERT_EQ(vr_devbook_state(b, &st), 0);
	ASSERT_UEQ(st.unused, 1 * GiB);
	reap(h);
	munmap(f, VR_DEVBOOK_SIZE);
	vr_devbook_close(b);
}

static void test_full(void)
{
	unsigned char u[16];
	char err[512];
	uint64_t given;
	uuid_of(5, u);
	pid_t h = sleeper();
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		ASSERT_EQ(admit(u, 100 + (uint64_t)i, 1 << 20, h, &given, err, sizeof err), 0);
	ASSERT_EQ(admit(u, 99, 1 << 20, h, &given, err, sizeof err), -EUSERS);
	reap(h);
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0); /* all reclaimed */
	struct vr_devbook *b = reader(u);
	ASSERT_UEQ(atomic_load(vr_devbook_guaranteed_word(b)), 0);
	vr_devbook_close(b);
}

/* What another user can and cannot do (a child as vrslurm). */
static void test_other_user(void)
{
	struct passwd *pw = getpwnam("vrslurm");
	if (!pw) {
		printf("note: no user vrslurm: another user's part skipped\n");
		return;
	}
	unsigned char u[16];
	char err[512], name[VR_DEVBOOK_NAME_MAX], path[8300];
	uint64_t given;
	uuid_of(6, u);
	pid_t h = sleeper();
	ASSERT_EQ(admit(u, 77, 4 * GiB, h, &given, err, sizeof err), 0);
	vr__devbook_name(u, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	pid_t c = fork();
	ASSERT_GE(c, 0);
	if (c == 0) {
		if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
			_exit(10);
		if (open(path, O_RDWR) >= 0 || errno != EACCES)
			_exit(11);
		int fd = open(path, O_RDONLY);
		if (fd < 0 || mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		                   0) != MAP_FAILED)
			_exit(12);
		struct vr_devbook *b = NULL;
		if (vr_devbook_open(dir, u, &b, err, sizeof err) != 0)
			_exit(13);
		struct vr_devbook_state st;
		if (vr_devbook_state(b, &st) != 0 || st.unused != 4 * GiB)
			_exit(14);
		if (vr_devbook_pending_add(b, GiB) != 0)
			_exit(15);
		struct vr_devfile *f = mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ, MAP_SHARED, fd, 0);
		struct sembuf sb = {.sem_num = 0, .sem_op = 1, .sem_flg = IPC_NOWAIT};
		if (f == MAP_FAILED || semop(f->e[0].semid, &sb, 1) == 0 || errno != EACCES)
			_exit(16);
		struct vr_devbook_ask a = {.capacity = CAP, .ident = 78, .guarantee = GiB};
		if (vr_devbook_admit(dir, u, &a, &given, err, sizeof err) != -EPERM)
			_exit(17);
		if (unlink(path) == 0 || rename(path, "/tmp/x") == 0)
			_exit(18);
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(c, &status, 0), c);
	ASSERT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	reap(h);
}

/* Books and directories that are not used, and the writer replacing. */
static void test_not_used(void)
{
	unsigned char u[16];
	char err[512] = "", name[VR_DEVBOOK_NAME_MAX], path[8300];
	struct vr_devbook *b = NULL;
	uuid_of(7, u);
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0);
	vr__devbook_name(u, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	ASSERT_EQ(chmod(path, 0666), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EPERM);
	if (!strstr(err, "writable by users other than root") || !strstr(err, name))
		TEST_FAILF("the line names the file and why: %s", err);
	ASSERT_EQ(chmod(path, 0644), 0);
	ASSERT_EQ(chown(path, 1, 1), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EPERM);
	if (!strstr(err, "not owned by root"))
		TEST_FAILF("%s", err);
	/* The writer replaces it with its own. */
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), 0);
	vr_devbook_close(b);
	struct vr_devfile *f = map_rw(u);
	f->h.magic = 0x1234;
	munmap(f, VR_DEVBOOK_SIZE);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EBADMSG);
	ASSERT_EQ(truncate(path, 4096), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EBADMSG);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(symlink("/etc/passwd", path), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EPERM);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), 0);
	/* The directory: another's, or writable by others. */
	ASSERT_EQ(chmod(dir, 0777), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EPERM);
	ASSERT_EQ(vr_devbook_make(dir, u, CAP, err, sizeof err), -EPERM);
	ASSERT_EQ(chmod(dir, 0755), 0);
	ASSERT_EQ(chown(dir, 1, 1), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), -EPERM);
	ASSERT_EQ(chown(dir, 0, 0), 0);
	ASSERT_EQ(vr_devbook_open(dir, u, &b, err, sizeof err), 0);
	vr_devbook_close(b);
	/* A relative $VRAMCTL_DEVICE_DIR names a book in every directory. */
	setenv("VRAMCTL_DEVICE_DIR", "devices", 1);
	ASSERT_EQ(vr_devbook_open(NULL, u, &b, err, sizeof err), -EINVAL);
	unsetenv("VRAMCTL_DEVICE_DIR");
}

static void test_no_secret(void)
{
	unsigned char u[16];
	char err[512];
	uint64_t given, secret = 0x0123456789abcdefull, ident = vr_devbook_ident(secret);
	ASSERT(ident != 0 && ident != secret);
	ASSERT_UEQ(vr_devbook_ident(secret), ident);
	uuid_of(8, u);
	pid_t h = sleeper();
	ASSERT_EQ(admit(u, ident, GiB, h, &given, err, sizeof err), 0);
	struct vr_devfile *f = map_rw(u);
	ASSERT(!memmem(f, VR_DEVBOOK_SIZE, &secret, sizeof secret));
	ASSERT(memmem(f, VR_DEVBOOK_SIZE, &ident, sizeof ident));
	munmap(f, VR_DEVBOOK_SIZE);
	reap(h);
}

int main(void)
{
	if (geteuid() != 0)
		SKIP("the device book is root's: run as root");
	/* World-traversable, root's: the other user must reach it. */
	snprintf(dir, sizeof dir, "/tmp/vramctl-devbook.XXXXXX");
	ASSERT(mkdtemp(dir));
	ASSERT_EQ(chmod(dir, 0755), 0);
	ASSERT_EQ(pipe(life), 0);
	test_make();
	test_admit();
	test_held_pending();
	test_forget();
	test_adopt();
	test_stuck_writer();
	test_full();
	test_other_user();
	test_not_used();
	test_no_secret();
	/* Every entry's processes are gone: the writer ends them, and their
	 * semaphores (which outlive files) go with them. */
	for (int i = 1; i <= 8; i++) {
		unsigned char u[16];
		char err[256];
		uuid_of(i, u);
		vr_devbook_make(dir, u, CAP, err, sizeof err);
	}
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("note: %s left behind\n", dir);
	printf("ok\n");
	return 0;
}
