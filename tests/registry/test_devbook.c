/*
 * test_devbook.c - the device book (src/registry/devbook.h): one book per
 * GPU shared by every capped process of every user.
 *
 *   open creates the door 0666 whatever the umask; list finds it
 *   join without a guarantee: a line, no entry, the guaranteed word 0
 *   admission: refused with the numbers (-ENOSPC) when guarantees given +
 *     asked + outside pass the capacity, accepted when they fit; outside
 *     leaves out the PIDs of live lines; a refused join holds no line
 *   a second process of the group joins its entry (the group's guarantee)
 *   unused_others: other groups' guarantees less what they hold, the top
 *     holder; a line of another group never counts as the group's own
 *   members killed with SIGKILL: the entry and its guarantee come back at
 *     the next reclaim (not while one member lives)
 *   close gives the line back, and the entry with the group's last line
 *   forget in a fork child: the parent keeps its line; a child that forgot
 *     does not keep a killed parent's line alive
 *   64 groups hold guarantees: the 65th is refused (-EUSERS); so is a
 *     process when every line's byte is held
 *   the lock: a stopped holder makes lock and join give up (-ETIMEDOUT);
 *     killed, the lock is free; another thread of the holder's process
 *     waits too
 *   another user (root only): books made by one user are joined by another
 *
 * Damage: test_devbook_damage.c. Each process is simulated by its own
 * open of the book (liveness is per open file description) or by a forked
 * child; nothing is timed.
 */
#include <pthread.h>
#include <stdint.h>

#include "tests/registry/devtest.h"

static void test_open_list(void)
{
	unsigned char u[16], got[4][16];
	uuid_of(1, u);
	mode_t old = umask(077);
	struct vr_devbook *b = open_or_fail(u);
	umask(old);
	char name[VR_DEVDOOR_NAME_MAX], path[8200];
	vr__devdoor_name(u, name);
	ASSERT_STR_EQ(name, "vramctl-dev-a0a1a2a3a4a5a6a7a8a9aaabacadae01");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct stat st;
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0666);
	ASSERT_EQ(st.st_size, VR_DEVDOOR_SIZE);
	/* Other files are not books. */
	snprintf(path, sizeof(path), "%s/vramctl-dev-notahexuuid", dir);
	ASSERT_EQ(close(open(path, O_CREAT | O_WRONLY, 0600)), 0);
	ASSERT_EQ(vr_devbook_list(dir, got, 4), 1);
	ASSERT_EQ(memcmp(got[0], u, 16), 0);
	unlink(path);

	/* A lone process: a line, no entry. */
	struct vr_devbook_who w = who_of("", 0, 10, 0);
	char err[256];
	ASSERT_EQ(vr_devbook_join(b, &w, err, sizeof(err)), 0);
	ASSERT_EQ(vr_devbook_join(b, &w, err, sizeof(err)), -EALREADY);
	ASSERT_UEQ(word(b), 0);
	ASSERT_UEQ(vr_devbook_guarantee(b), 0);
	vr_devbook_held(b, 100); /* no entry: no-op */
	struct vr_devbook_view v = view_of(u);
	ASSERT_EQ(v.lines_live, 1);
	ASSERT_EQ(v.n, 0);
	ASSERT_UEQ(v.capacity, CAP);
	ASSERT_EQ(memcmp(v.uuid, u, 16), 0);
	/* A later opener with another capacity uses the recorded one. */
	struct vr_devbook *b2 = NULL;
	ASSERT_EQ(vr_devbook_open(dir, u, 5 * CAP, &b2, err, sizeof(err)), 0);
	w = who_of("big", 77, 11, CAP + 1);
	ASSERT_EQ(vr_devbook_join(b2, &w, err, sizeof(err)), -ENOSPC);
	vr_devbook_close(b2);
	vr_devbook_close(b);
	/* The last process gone, the book has nobody in it. */
	ASSERT_EQ(vr_devbook_read(dir, u, &v), -ENOENT);
	printf("open, list, lone line: ok\n");
}

static void test_admission(void)
{
	unsigned char u[16];
	uuid_of(2, u);
	struct vr_devbook *a = member(u, "alpha", 0xa1, 100, 600);
	ASSERT_UEQ(word(a), 600);
	ASSERT_UEQ(vr_devbook_guarantee(a), 600);

	/* 600 given + 300 asked + 200 outside > 1000: refused, with the numbers. */
	struct vr_devbook_proc procs[2] = {{.pid = 100, .bytes = 500}, {.pid = 4242, .bytes = 200}};
	struct vr_devbook *b = open_or_fail(u);
	struct vr_devbook_who w = who_of("beta", 0xb2, 200, 300);
	w.procs = procs;
	w.nprocs = 2;
	char err[512] = "";
	ASSERT_EQ(vr_devbook_join(b, &w, err, sizeof(err)), -ENOSPC);
	printf("refused: %s\n", err);
	ASSERT(strstr(err, "beta") != NULL);
	ASSERT(strstr(err, "given 600 B") != NULL);
	ASSERT(strstr(err, "outside vramctl 200 B") != NULL);
	ASSERT(strstr(err, "asked 300 B") != NULL);
	ASSERT(strstr(err, "capacity 1000 B") != NULL);
	struct vr_devbook_view v = view_of(u);
	ASSERT_EQ(v.lines_live, 1); /* the refused join holds no line */
	ASSERT_EQ(v.n, 1);
	ASSERT_UEQ(word(a), 600);

	/* 600 + 300 + 100 outside fits exactly (pid 100 is a line: inside). */
	procs[1].bytes = 100;
	ASSERT_EQ(vr_devbook_join(b, &w, err, sizeof(err)), 0);
	ASSERT_UEQ(word(a), 900);
	ASSERT_UEQ(vr_devbook_guarantee(b), 300);

	/* Unknown outside (NULL): counted as 0; still nothing left for 101. */
	struct vr_devbook *c = open_or_fail(u);
	w = who_of("gamma", 0xc3, 300, 101);
	ASSERT_EQ(vr_devbook_join(c, &w, err, sizeof(err)), -ENOSPC);
	w.guarantee = 100;
	ASSERT_EQ(vr_devbook_join(c, &w, err, sizeof(err)), 0);
	ASSERT_UEQ(word(a), 1000);

	/* A second process of alpha joins alpha's entry, whatever it asks. */
	struct vr_devbook *a2 = member(u, "alpha", 0xa1, 101, 5);
	ASSERT_UEQ(vr_devbook_guarantee(a2), 600);
	ASSERT_UEQ(word(a), 1000);
	/* The same key under another uid is another group: it does not fit. */
	struct vr_devbook *x = open_or_fail(u);
	w = who_of("alpha", 0xa1, 102, 1);
	w.uid += 1;
	ASSERT_EQ(vr_devbook_join(x, &w, err, sizeof(err)), -ENOSPC);
	vr_devbook_close(x);
	v = view_of(u);
	ASSERT_EQ(v.n, 3);
	ASSERT_EQ(v.lines_live, 4);
	ASSERT_UEQ(v.guaranteed, 1000);

	/* Held: alpha 100 + 50, beta 70; each sees the others' unused. */
	vr_devbook_held(a, 100);
	vr_devbook_held(a2, 80);
	vr_devbook_held(a2, -30);
	vr_devbook_held(b, 70);
	struct vr_devbook_holder top;
	ASSERT_UEQ(unused_others(b, &top), (600 - 150) + 100);
	ASSERT_STR_EQ(top.group, "alpha");
	ASSERT_UEQ(top.guarantee, 600);
	ASSERT_UEQ(top.held, 150);
	ASSERT_EQ(top.pid, 100);
	ASSERT_UEQ(unused_others(a, &top), (300 - 70) + 100);
	ASSERT_STR_EQ(top.group, "beta");
	ASSERT_UEQ(top.held, 70); /* alpha's lines never count for beta */
	/* Held past the guarantee: nothing unused, never negative. */
	vr_devbook_held(c, 150);
	ASSERT_UEQ(unused_others(a, NULL), 230);
	v = view_of(u);
	for (int i = 0; i < v.n; i++) {
		printf("entry %s: guarantee %llu held %llu live %d\n", v.e[i].group,
		       (unsigned long long)v.e[i].guarantee, (unsigned long long)v.e[i].held,
		       v.e[i].live);
		ASSERT(v.e[i].live);
		if (strcmp(v.e[i].group, "alpha") == 0)
			ASSERT_UEQ(v.e[i].held, 150);
	}

	/* Close: alpha's entry stays while a2 lives, goes with it. */
	vr_devbook_close(a);
	ASSERT_UEQ(unused_others(b, NULL), (600 - 50) + 0);
	vr_devbook_close(a2);
	ASSERT_UEQ(unused_others(b, NULL), 0);
	ASSERT_UEQ(word(b), 400);
	vr_devbook_close(c);
	vr_devbook_close(b);
	printf("admission, entries, unused_others: ok\n");
}

static void test_killed(void)
{
	unsigned char u[16];
	uuid_of(3, u);
	struct vr_devbook *me = member(u, "watcher", 0, 1, 0);
	pid_t e1 = child_member(u, "eps", 0xe5, 400);
	pid_t e2 = child_member(u, "eps", 0xe5, 400);
	pid_t z = child_member(u, "zeta", 0x2e, 500);
	ASSERT_UEQ(word(me), 900);
	struct vr_devbook_view v = view_of(u);
	ASSERT_EQ(v.lines_live, 4);
	ASSERT_EQ(v.n, 2);
	ASSERT_UEQ(unused_others(me, NULL), (400 - 20) + (500 - 10));

	/* One of eps killed: the group lives on, its bytes no longer held. */
	kill_reap(e1);
	ASSERT_UEQ(unused_others(me, NULL), (400 - 10) + (500 - 10));
	ASSERT_UEQ(word(me), 900);
	/* The dead's guarantee is not given twice: 900 + 101 does not fit. */
	struct vr_devbook *t = open_or_fail(u);
	struct vr_devbook_who w = who_of("theta", 0x7, 5, 101);
	char err[512];
	ASSERT_EQ(vr_devbook_join(t, &w, err, sizeof(err)), -ENOSPC);
	/* Both killed: eps's guarantee comes back at the next reclaim. */
	kill_reap(e2);
	ASSERT_UEQ(word(me), 900); /* until someone reclaims: conservative */
	ASSERT_UEQ(unused_others(me, NULL), 500 - 10);
	ASSERT_UEQ(word(me), 500);
	v = view_of(u);
	ASSERT_EQ(v.n, 1);
	ASSERT_STR_EQ(v.e[0].group, "zeta");
	ASSERT_EQ(v.lines_live, 2);
	ASSERT_EQ(vr_devbook_join(t, &w, err, sizeof(err)), 0);
	ASSERT_UEQ(word(me), 601);
	/* zeta killed: a join reclaims it too. */
	kill_reap(z);
	struct vr_devbook *t2 = member(u, "iota", 0x10, 6, 399);
	ASSERT_UEQ(word(me), 500);
	vr_devbook_close(t2);
	vr_devbook_close(t);
	vr_devbook_close(me);
	printf("killed members: ok\n");
}

static void test_forget(void)
{
	unsigned char u[16];
	uuid_of(4, u);
	struct vr_devbook *me = member(u, "watcher", 0, 1, 0);
	/* A member whose fork child forgets the book and lives on; the member
	 * is killed: its line and entry go all the same. */
	int p[2], q[2];
	ASSERT_EQ(pipe(p), 0);
	ASSERT_EQ(pipe(q), 0);
	fflush(stdout);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		struct vr_devbook *b = NULL;
		char err[256], c;
		struct vr_devbook_who w = who_of("kappa", 0x44, getpid(), 300);
		if (vr_devbook_open(dir, u, CAP, &b, err, sizeof(err)) != 0 ||
		    vr_devbook_join(b, &w, err, sizeof(err)) != 0)
			_exit(2);
		pid_t kid = fork();
		if (kid == 0) {
			vr_devbook_forget(b);
			c = 'k';
			if (write(q[1], &c, 1) != 1)
				_exit(2);
			live_until_the_end();
		}
		/* The parent's line is still its own once a child forgot. */
		pid_t kid2 = fork();
		if (kid2 == 0) {
			vr_devbook_forget(b);
			_exit(0);
		}
		int st;
		waitpid(kid2, &st, 0);
		if (read(q[0], &c, 1) != 1 || c != 'k')
			_exit(2);
		struct vr_devbook_view v;
		c = vr_devbook_read(dir, u, &v) == 0 && v.lines_live == 2 && v.n == 1 ? 'y' : 'n';
		if (write(p[1], &kid, sizeof(kid)) != sizeof(kid) || write(p[1], &c, 1) != 1)
			_exit(2);
		live_until_the_end();
	}
	close(p[1]);
	close(q[0]);
	close(q[1]);
	char c = 0;
	pid_t kid = 0;
	ASSERT_EQ(read(p[0], &kid, sizeof(kid)), (ssize_t)sizeof(kid));
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, 'y');
	close(p[0]);
	ASSERT_UEQ(word(me), 300);
	kill_reap(pid);
	ASSERT_UEQ(unused_others(me, NULL), 0);
	ASSERT_UEQ(word(me), 0);
	kill(kid, SIGKILL); /* the grandchild: reparented, reaped by init */
	vr_devbook_close(me);
	printf("forget in a fork child: ok\n");
}

static void test_full(void)
{
	unsigned char u[16];
	uuid_of(5, u);
	struct vr_devbook *b[VR_DEVBOOK_GROUPS + 1];
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		b[i] = member(u, "g", 1000 + (uint64_t)i, 100 + i, 1);
	b[VR_DEVBOOK_GROUPS] = open_or_fail(u);
	struct vr_devbook_who w = who_of("one-more", 1, 99, 1);
	char err[512];
	ASSERT_EQ(vr_devbook_join(b[VR_DEVBOOK_GROUPS], &w, err, sizeof(err)), -EUSERS);
	printf("full: %s\n", err);
	/* Without a guarantee it still gets a line. */
	w.guarantee = 0;
	ASSERT_EQ(vr_devbook_join(b[VR_DEVBOOK_GROUPS], &w, err, sizeof(err)), 0);
	ASSERT_UEQ(word(b[0]), VR_DEVBOOK_GROUPS);
	for (int i = 0; i <= VR_DEVBOOK_GROUPS; i++)
		vr_devbook_close(b[i]);
	struct vr_devbook *x = open_or_fail(u);
	/* Every line's byte held (by a process that reads the door: any user
	 * can): no line to take, -EUSERS; let go, a line again. */
	char name[VR_DEVDOOR_NAME_MAX], path[8200];
	vr__devdoor_name(u, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	ASSERT(fd >= 0);
	struct flock fl = {.l_type = F_RDLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = VR_DEVDOOR_LINE_BYTE(0),
	                   .l_len = VR_DEVBOOK_LINES};
	ASSERT_EQ(fcntl(fd, F_OFD_SETLK, &fl), 0);
	ASSERT_EQ(vr_devbook_join(x, &w, err, sizeof(err)), -EUSERS);
	printf("no line: %s\n", err);
	close(fd);
	ASSERT_EQ(vr_devbook_join(x, &w, err, sizeof(err)), 0);
	vr_devbook_close(x);
	printf("64 groups, 1,024 lines: ok\n");
}

static void test_lock_bound(void)
{
	unsigned char u[16];
	uuid_of(9, u);
	struct vr_devbook *b = member(u, "omicron", 0x99, 1, 10);
	fflush(stdout);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		struct vr_devbook *c = NULL;
		char err[256];
		if (vr_devbook_open(dir, u, CAP, &c, err, sizeof(err)) != 0 ||
		    vr_devbook_lock(c) != 0)
			_exit(2);
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, WUNTRACED), pid);
	ASSERT(WIFSTOPPED(st));
	ASSERT_EQ(vr_devbook_lock(b), -ETIMEDOUT);
	struct vr_devbook *j = open_or_fail(u);
	struct vr_devbook_who w = who_of("pi", 0x98, 2, 10);
	char err[512] = "";
	ASSERT_EQ(vr_devbook_join(j, &w, err, sizeof(err)), -ETIMEDOUT);
	printf("stopped holder: %s\n", err);
	/* The reader takes no lock. */
	struct vr_devbook_view v = view_of(u);
	ASSERT_EQ(v.n, 1);
	kill_reap(pid);
	ASSERT_EQ(vr_devbook_lock(b), 0);
	vr_devbook_unlock(b);
	ASSERT_EQ(vr_devbook_join(j, &w, err, sizeof(err)), 0);
	ASSERT_UEQ(word(b), 20);
	vr_devbook_close(j);
	vr_devbook_close(b);
	printf("lock bound: ok\n");
}

/* Takes the lock and gives it back: what vr_devbook_lock said. */
static void *lock_from_thread(void *arg)
{
	int rc = vr_devbook_lock(arg);
	if (rc == 0)
		vr_devbook_unlock(arg);
	return (void *)(intptr_t)rc;
}

/* Threads of one process share the door's open file description, so the
 * OFD lock alone would let a second thread in: it waits like any other. */
static void test_lock_threads(void)
{
	unsigned char u[16];
	uuid_of(11, u);
	struct vr_devbook *b = member(u, "rho", 0x77, 1, 10);
	ASSERT_EQ(vr_devbook_lock(b), 0);
	pthread_t t;
	void *rc = NULL;
	ASSERT_EQ(pthread_create(&t, NULL, lock_from_thread, b), 0);
	ASSERT_EQ(pthread_join(t, &rc), 0);
	ASSERT_EQ((intptr_t)rc, -ETIMEDOUT);
	vr_devbook_unlock(b);
	ASSERT_EQ(pthread_create(&t, NULL, lock_from_thread, b), 0);
	ASSERT_EQ(pthread_join(t, &rc), 0);
	ASSERT_EQ((intptr_t)rc, 0);
	vr_devbook_close(b);
	printf("lock between threads: ok\n");
}

/* Root only: a book one user made, joined by another user. */
static void test_users(void)
{
	if (geteuid() != 0) {
		printf("other users: skipped (not root)\n");
		return;
	}
	char shared[] = "/dev/shm/vramctl-test-XXXXXX";
	if (!mkdtemp(shared)) {
		printf("other users: skipped (no /dev/shm)\n");
		return;
	}
	ASSERT_EQ(chmod(shared, 01777), 0);
	char saved[4096];
	snprintf(saved, sizeof(saved), "%s", dir);
	snprintf(dir, sizeof(dir), "%s", shared);
	unsigned char u[16];
	uuid_of(10, u);
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	fflush(stdout);
	pid_t first = fork();
	ASSERT(first >= 0);
	if (first == 0) {
		umask(022);
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		struct vr_devbook *b = NULL;
		char err[256];
		struct vr_devbook_who w = who_of("theirs", 0x1234, getpid(), 700);
		char ok = vr_devbook_open(dir, u, CAP, &b, err, sizeof(err)) == 0 &&
		                  vr_devbook_join(b, &w, err, sizeof(err)) == 0
		              ? 'y'
		              : 'n';
		if (ok != 'y')
			fprintf(stderr, "as 65534: %s\n", err);
		if (write(p[1], &ok, 1) != 1)
			_exit(2);
		live_until_the_end();
	}
	char c = 0;
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, 'y');
	fflush(stdout);
	pid_t second = fork();
	ASSERT(second >= 0);
	if (second == 0) {
		if (setgid(65533) != 0 || setuid(65533) != 0)
			_exit(3);
		struct vr_devbook *b = NULL;
		char err[256];
		struct vr_devbook_who w = who_of("mine", 0x1234, getpid(), 301);
		if (vr_devbook_open(dir, u, CAP, &b, err, sizeof(err)) != 0)
			_exit(4);
		if (vr_devbook_join(b, &w, err, sizeof(err)) != -ENOSPC)
			_exit(5);
		w.guarantee = 300;
		if (vr_devbook_join(b, &w, err, sizeof(err)) != 0)
			_exit(6);
		struct vr_devbook_holder top;
		if (vr_devbook_lock(b) != 0 || vr_devbook_unused_others(b, &top) != 700 ||
		    strcmp(top.group, "theirs") != 0 || top.uid != 65534)
			_exit(7);
		vr_devbook_unlock(b);
		vr_devbook_close(b);
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(second, &st, 0), second);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	kill_reap(first);
	char name[VR_DEVDOOR_NAME_MAX], path[8200];
	vr__devdoor_name(u, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct stat sb;
	ASSERT_EQ(stat(path, &sb), 0);
	ASSERT_EQ(sb.st_uid, 65534);
	unlink(path);
	rmdir(shared);
	snprintf(dir, sizeof(dir), "%s", saved);
	close(p[0]);
	close(p[1]);
	printf("other users: ok\n");
}

int main(void)
{
	devtest_setup();
	char d[4096];
	ASSERT_EQ(vr_devbook_dir(d, sizeof(d)), 0);
	ASSERT_STR_EQ(d, dir);
	test_open_list();
	test_admission();
	test_killed();
	test_forget();
	test_full();
	test_lock_bound();
	test_lock_threads();
	test_users();
	return 0;
}
