/*
 * serve.c - the thread that answers on a group's socket for a member
 * (serve.h).
 *
 * Every member answers: each has one thread, in the injected library too,
 * accepting on the group's one listening socket (the kernel gives each
 * connection to one of them), so the books can be handed over while any
 * member lives, and a member that dies or stops takes nothing with it.
 * What the thread may never do to the program it runs in:
 *
 *   - signals: it is started with every signal blocked, so none of the
 *     program's is ever delivered to it;
 *   - descriptors: all are close-on-exec. Where the kernel allows it
 *     (close_range(CLOSE_RANGE_UNSHARE), Linux 5.9, not filtered by the
 *     container runtimes' seccomp profiles; else unshare(CLONE_FILES)) the
 *     thread keeps them in a descriptor table of its own: a program that
 *     closes all its descriptors (daemons, subprocess helpers) neither takes
 *     them from it nor finds one of its own numbers answered by it, and the
 *     thread holds no file of the program's open (it closes its copy of
 *     every other one at once: a pipe's reader still sees its end). Its
 *     descriptors reach it in flight on a socket pair, taken once it has
 *     its table: none is left in the program's, where a fork child that
 *     does not forget the member would keep the group's listening socket
 *     open, answering nobody. Where neither call is allowed it works in the
 *     program's table, at numbers from 100 up, and checks before every use
 *     that each number still names its file (device and inode): when one
 *     does not, the program has closed it, and the thread ends without
 *     touching it;
 *   - hangs: every call on a connection is non-blocking, one message is
 *     written and nothing is read from the asker; the thread waits only in
 *     epoll_wait (poll in the program's table), and looks at the socket's
 *     name every VR_SERVE_CHECK_MS;
 *   - fork: a child has no such thread; the library's fork handler
 *     (vr_forget) closes the child's copies; the thread takes no lock and
 *     allocates nothing while it serves;
 *   - the member's memory: the thread has its own copy of what it needs;
 *     vr_leave writes it a stop byte and waits (at most VR_SERVE_WAIT_S)
 *     for its end, so a member that left answers no more, and a join
 *     returns once the thread holds its descriptors (at most as long).
 *
 * The socket's name removed (rm, a tmp cleaner) while the group lives: the
 * first thread to look makes a new socket at the name; the others find
 * another file there, ask it, and take its listening socket when it hands
 * over the very books they serve (same memfd). When it hands over other
 * books, a new group has taken the name: said once, through the notice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/contract.h"
#include "registry/knobs.h"
#include "registry/serve.h"
#include "registry/sys.h"
#include "registry/util.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

#define VR_SERVE_CHECK_MS 2000 /* how often the socket's name is looked at */
#define VR_SERVE_FD_BASE  100  /* the thread's numbers in the program's table */
#define VR_SERVE_WAIT_S   1    /* how long a join or a leave waits for the thread */
#define VR_SERVE_ACCEPTS  64   /* connections answered per wake-up, at most */
#define VR_SERVE_ADOPT_MS 500  /* how long a look at another socket waits */
#define VR_SERVE_STACK    (256u << 10)

/* The thread's descriptors, in one array: which is which. */
enum { T_BOOKS, T_DOOR, T_LISTEN, T_STOP, T_DIR, T_N };

struct fd_id {
	int fd;
	dev_t dev;
	ino_t ino;
};

/* What both sides know: which table the thread works in (TABLE_*) and, in
 * the program's, its descriptors there (for a fork child to close its
 * copies). Freed by the last of the two sides. */
enum { TABLE_UNSAID, TABLE_OWN, TABLE_SHARED };
struct shared {
	sem_t taken; /* posted once the thread has its descriptors */
	sem_t ended; /* posted once it has closed them, at its end */
	_Atomic int refs;
	_Atomic int table;
	struct fd_id t[T_N]; /* written before table is TABLE_SHARED */
};

/* The member's side. */
struct vr_serve {
	struct fd_id stop_w;  /* the stop pipe's write end */
	struct fd_id handoff; /* where the thread took its descriptors from */
	struct shared *sh;
	pthread_t th; /* joined by vr_serve_stop, else detached */
};

/* The thread's own state (freed by the thread). */
struct serve_thread {
	struct shared *sh;
	int handoff; /* the socket its descriptors come through */
	struct fd_id t[T_N];
	uint64_t key;
	int private_table;
	int ep;         /* its epoll set, in a table of its own (-1: it polls) */
	dev_t name_dev; /* the file at the socket's name, as last seen (0: none) */
	ino_t name_ino;
	int said;
	uid_t owner; /* whose books these are (vr_owner at the start) */
	void (*notice)(const char *line);
	char group[VR_GROUP_NAME_MAX + 1];
	char dir[PATH_MAX];
};

static void shared_put(struct shared *sh)
{
	if (atomic_fetch_sub(&sh->refs, 1) == 1) {
		sem_destroy(&sh->taken);
		sem_destroy(&sh->ended);
		free(sh);
	}
}

/* 1 when fd still names the file it was taken for. */
static int fd_ok(const struct fd_id *f)
{
	struct stat st;
	return f->fd >= 0 && vr_sys_fstat(f->fd, &st) == 0 && st.st_dev == f->dev &&
	       st.st_ino == f->ino;
}

static int fd_take(struct fd_id *f, int fd)
{
	struct stat st;
	f->fd = fd;
	if (fd < 0 || vr_sys_fstat(fd, &st) != 0)
		return -1;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return 0;
}

/* Closes f's descriptor if it still names its file (or always, when the
 * table is the thread's own). */
static void fd_drop(struct fd_id *f, int own_table)
{
	if (f->fd >= 0 && (own_table || fd_ok(f)))
		vr_sys_close(f->fd);
	f->fd = -1;
}

/* A copy of fd at VR_SERVE_FD_BASE or above (else the lowest), close-on-exec. */
static int high_dup(int fd)
{
	int n = vr_sys_fcntl(fd, F_DUPFD_CLOEXEC, VR_SERVE_FD_BASE);
	return n >= 0 ? n : vr_sys_fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* ---- the thread */

/* Closes [lo, hi] of the thread's own table. */
static void close_gap(unsigned lo, unsigned hi)
{
	if (lo > hi || vr_sys_close_range(lo, hi, 0) == 0)
		return;
	/* Before Linux 5.9: the open ones, from /proc, else every number. */
	DIR *d = opendir("/proc/thread-self/fd");
	if (d) {
		int self = dirfd(d), fds[256], n = 0;
		struct dirent *e;
		while ((e = readdir(d)) && n < 256) {
			long v = strtol(e->d_name, NULL, 10);
			if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && v != self &&
			    (unsigned long)v >= lo && (unsigned long)v <= hi)
				fds[n++] = (int)v;
		}
		closedir(d);
		for (int i = 0; i < n; i++)
			vr_sys_close(fds[i]);
		if (n < 256)
			return;
	}
	struct rlimit rl;
	unsigned top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20)
	                   ? (unsigned)rl.rlim_cur
	                   : (1u << 20);
	for (unsigned fd = lo; fd <= hi && fd < top; fd++)
		vr_sys_close((int)fd);
}

/* Takes a descriptor table of its own and closes every number in it but
 * the thread's. 1 when it has one, 0 when it works in the program's. */
static int own_table(struct serve_thread *t)
{
	if (vr_test_serve_shared ||
	    (vr_sys_close_range(~0u, ~0u, CLOSE_RANGE_UNSHARE) != 0 && unshare(CLONE_FILES) != 0))
		return 0;
	if (t->handoff > 0)
		close_gap(0, (unsigned)t->handoff - 1);
	close_gap((unsigned)t->handoff + 1, ~0u);
	return 1;
}

/* What the member's side sent through the hand-off socket. */
struct handoff_msg {
	uint32_t listen; /* 1: a listening socket is the last descriptor */
};

/* Takes the thread's descriptors from the hand-off socket (in flight there:
 * they were never in its table, nor left in the program's), at numbers from
 * VR_SERVE_FD_BASE up in the program's table. 0 or -1. */
static int take_fds(struct serve_thread *t)
{
	struct handoff_msg msg;
	int fds[T_N], order[T_N] = {T_BOOKS, T_DOOR, T_STOP, T_DIR, T_LISTEN};
	int n = vr_ho_recvfds(t->handoff, &msg, sizeof(msg), fds, T_N);
	vr_sys_close(t->handoff);
	t->handoff = -1;
	if (n < T_N - 1 || n != T_N - 1 + (msg.listen == 1)) {
		for (int i = 0; i < n; i++)
			vr_sys_close(fds[i]);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (!t->private_table) {
			int h = high_dup(fds[i]);
			vr_sys_close(fds[i]);
			fds[i] = h;
		}
		fd_take(&t->t[order[i]], fds[i]);
	}
	return 0;
}

/* Says line once, through the notice, on the program's standard error. */
static void say(struct serve_thread *t, const char *fmt, ...) VR_PRINTF(2, 3);
static void say(struct serve_thread *t, const char *fmt, ...)
{
	if (t->said || !t->notice)
		return;
	t->said = 1;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!t->private_table) {
		t->notice(line);
		return;
	}
	/* Our table has no standard error: the program's, for the moment of
	 * one write (never blocking the thread on a full pipe). */
	int e = vr_sys_openat(AT_FDCWD, "/proc/self/fd/2",
	                      O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_APPEND, 0);
	if (e < 0)
		return;
	if (e == 2 || syscall(SYS_dup3, e, 2, O_CLOEXEC) == 2)
		t->notice(line);
	vr_sys_close(2);
	if (e != 2)
		vr_sys_close(e);
}

/* The file at the socket's name: 1 with its id, 0 none, -1 cannot tell. */
static int name_id(struct serve_thread *t, dev_t *dev, ino_t *ino)
{
	char name[VR_HO_NAME_MAX];
	struct stat st;
	vr_ho_name(t->group, name, sizeof(name));
	if (vr_sys_fstatat(t->t[T_DIR].fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 1;
}

/* Adds descriptor k to the thread's epoll set: the listening socket
 * EPOLLEXCLUSIVE, so that each connection wakes one member's thread, not
 * every member's (with poll, 1,000 members joining at once made a million
 * wake-ups). */
static void watch(struct serve_thread *t, int k)
{
	struct epoll_event e = {.events = EPOLLIN | (k == T_LISTEN ? EPOLLEXCLUSIVE : 0u),
	                        .data.u32 = (uint32_t)k};
	if (t->ep >= 0 && t->t[k].fd >= 0)
		vr_sys_epoll_ctl(t->ep, EPOLL_CTL_ADD, t->t[k].fd, &e);
}

/* Answers on the listening socket s from now on (it replaces the old one). */
static void switch_to(struct serve_thread *t, int s)
{
	if (!t->private_table) {
		int h = high_dup(s);
		vr_sys_close(s);
		s = h;
	}
	struct fd_id n;
	if (fd_take(&n, s) != 0) {
		if (s >= 0)
			vr_sys_close(s);
		return;
	}
	if (t->ep >= 0 && t->t[T_LISTEN].fd >= 0)
		vr_sys_epoll_ctl(t->ep, EPOLL_CTL_DEL, t->t[T_LISTEN].fd, NULL);
	fd_drop(&t->t[T_LISTEN], t->private_table);
	t->t[T_LISTEN] = n;
	watch(t, T_LISTEN);
}

/* Another file at the socket's name: ask it. Its listening socket is taken
 * when it hands over these very books; a socket nobody listens on is
 * replaced by a new one of ours. */
static void adopt(struct serve_thread *t, dev_t dev, ino_t ino)
{
	struct vr_ho_fds f;
	uint64_t end = vr_now_ns() + (uint64_t)VR_SERVE_ADOPT_MS * 1000000u;
	int rc = vr_ho_fetch(t->t[T_DIR].fd, t->dir, t->group, t->owner, end, &f);
	if (rc == -ECONNREFUSED) {
		int s = vr_ho_listen(t->t[T_DIR].fd, t->dir, t->group, 1);
		if (s >= 0 && name_id(t, &t->name_dev, &t->name_ino) == 1)
			switch_to(t, s);
		else if (s >= 0)
			vr_sys_close(s);
		return;
	}
	if (rc != 0)
		return; /* looked at again later */
	t->name_dev = dev;
	t->name_ino = ino;
	struct stat a, b;
	if (vr_sys_fstat(f.books, &a) == 0 && vr_sys_fstat(t->t[T_BOOKS].fd, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		switch_to(t, f.listen);
		f.listen = -1;
	} else {
		say(t,
		    "the group's socket %s/.%s.vrg.sock now hands over another group's books: "
		    "its files were removed while this group lives, and processes that join "
		    "it now keep books apart from this process's",
		    t->dir, t->group);
	}
	vr_ho_close(&f);
}

/* Looks at the socket's name: ours, gone (made again), or another file. */
static void check_name(struct serve_thread *t)
{
	dev_t dev = 0;
	ino_t ino = 0;
	int r = name_id(t, &dev, &ino);
	if (r < 0 || (r == 1 && dev == t->name_dev && ino == t->name_ino))
		return;
	if (r == 1) {
		adopt(t, dev, ino);
		return;
	}
	int s = vr_ho_listen(t->t[T_DIR].fd, t->dir, t->group, 0);
	if (s < 0)
		return; /* -EEXIST: another member's, taken at the next look */
	if (name_id(t, &t->name_dev, &t->name_ino) == 1)
		switch_to(t, s);
	else
		vr_sys_close(s);
}

/* 1 while every descriptor the thread answers with is still its own. */
static int fds_ok(const struct serve_thread *t)
{
	if (t->private_table)
		return 1;
	return fd_ok(&t->t[T_BOOKS]) && fd_ok(&t->t[T_DOOR]) && fd_ok(&t->t[T_DIR]) &&
	       (t->t[T_LISTEN].fd < 0 || fd_ok(&t->t[T_LISTEN]));
}

static void answer(struct serve_thread *t)
{
	struct vr_ho_fds f = {.books = t->t[T_BOOKS].fd,
	                      .door = t->t[T_DOOR].fd,
	                      .listen = t->t[T_LISTEN].fd,
	                      .key = t->key};
	/* In the program's table, each number is checked before it is used:
	 * one the program closed and reused is never accepted on nor sent. */
	for (int i = 0; i < VR_SERVE_ACCEPTS && f.listen >= 0 && fds_ok(t); i++) {
		int c = vr_sys_accept4(f.listen, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0)
			return;
		if (fds_ok(t))
			(void)vr_ho_answer_one(c, &f, t->owner);
		vr_sys_close(c);
	}
}

/* What woke the thread. */
enum { W_LISTEN = 1, W_STOP = 2 };

/* Waits at most ms for a connection or the stop pipe: W_* bits, or -1 when
 * the thread must end (a descriptor of it is no longer its own). In a table
 * of its own the thread waits in its epoll set; in the program's it polls
 * (an epoll descriptor cannot be told from one of the program's by its
 * inode, so it is not kept there). */
static int wait_events(struct serve_thread *t, int ms)
{
	int got = 0;
	if (t->ep >= 0) {
		struct epoll_event e[2];
		int n = vr_sys_epoll_wait(t->ep, e, 2, ms);
		if (n < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++)
			got |= e[i].data.u32 == T_LISTEN ? W_LISTEN : W_STOP;
		return got;
	}
	int nstop = t->t[T_STOP].fd >= 0 && (t->private_table || fd_ok(&t->t[T_STOP]));
	struct pollfd p[2] = {{.fd = t->t[T_LISTEN].fd, .events = POLLIN},
	                      {.fd = t->t[T_STOP].fd, .events = POLLIN}};
	int n = vr_sys_poll(p, nstop ? 2 : 1, ms);
	if ((n < 0 && errno != EINTR) || (n > 0 && (p[0].revents & POLLNVAL)))
		return -1;
	if (n > 0 && (p[0].revents & POLLIN))
		got |= W_LISTEN;
	if (n > 0 && nstop && p[1].revents)
		got |= W_STOP;
	return got;
}

/* Serves until the stop byte, or (in the program's table) until one of the
 * thread's descriptors is no longer its own. */
static void serve_loop(struct serve_thread *t)
{
	uint64_t next = vr_now_ns();
	if (t->t[T_LISTEN].fd >= 0)
		next += (uint64_t)VR_SERVE_CHECK_MS * 1000000u;
	for (;;) {
		if (!fds_ok(t))
			return;
		uint64_t now = vr_now_ns();
		int ms = now >= next ? 0 : (int)((next - now) / 1000000u) + 1;
		int got = wait_events(t, ms);
		if (got < 0)
			return;
		if (got & W_STOP) {
			char c;
			ssize_t r = vr_sys_read(t->t[T_STOP].fd, &c, 1);
			if (r == 1)
				return;
			/* The program closed its end of the pipe (it closes all its
			 * descriptors): the member lives on, and so does the thread. */
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				fd_drop(&t->t[T_STOP], t->private_table);
		}
		if (got & W_LISTEN)
			answer(t);
		if (vr_now_ns() >= next) {
			check_name(t);
			next = vr_now_ns() + (uint64_t)VR_SERVE_CHECK_MS * 1000000u;
		}
	}
}

static void *serve_main(void *arg)
{
	struct serve_thread *t = arg;
	for (int i = 0; i < T_N; i++)
		t->t[i].fd = -1;
	t->private_table = own_table(t);
	int ok = take_fds(t) == 0;
	/* In the program's table a fork child must know our numbers there. */
	if (!t->private_table)
		memcpy(t->sh->t, t->t, sizeof(t->t));
	atomic_store(&t->sh->table, t->private_table ? TABLE_OWN : TABLE_SHARED);
	sem_post(&t->sh->taken);
	/* The file at the name is the socket it was handed or made, as far as
	 * it knows; without one, the first look asks whatever is there. */
	if (t->t[T_LISTEN].fd < 0 || name_id(t, &t->name_dev, &t->name_ino) != 1)
		t->name_dev = 0, t->name_ino = 0;
	t->ep = t->private_table ? vr_sys_epoll_create() : -1;
	watch(t, T_LISTEN);
	watch(t, T_STOP);
	if (ok)
		serve_loop(t);
	for (int i = 0; i < T_N; i++)
		fd_drop(&t->t[i], t->private_table);
	if (t->ep >= 0)
		vr_sys_close(t->ep);
	sem_post(&t->sh->ended);
	shared_put(t->sh);
	free(t);
	return NULL;
}

/* ---- the member's side */

/* Waits for sem, VR_SERVE_WAIT_S at most: 0 once posted, else -1. */
static int wait_for(sem_t *sem)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += VR_SERVE_WAIT_S;
	int rc;
	while ((rc = sem_timedwait(sem, &until)) != 0 && errno == EINTR)
		;
	return rc == 0 ? 0 : -1;
}

/* A read-only open file of the door of its own (no locks of the member's
 * open file ride on it), at the descriptor's file. */
static int reopen_door(const struct vr_serve_args *a)
{
	char path[64];
	struct stat want, got;
	if (fstat(a->door, &want) != 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", a->door);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && a->door_name)
		fd = openat(a->dfd, a->door_name,
		            O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd >= 0 &&
	    (fstat(fd, &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Puts the thread's descriptors in flight on a socket pair: the thread
 * takes them from its end once it has its own table, and none is ever left
 * in the program's (a fork child that does not forget the member would
 * keep the group's listening socket open, answering nobody). Returns the
 * thread's end, or -1. */
static int hand_off(const struct vr_serve_args *a, int stop_r)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) != 0)
		return -1;
	int door = reopen_door(a);
	struct handoff_msg msg = {.listen = a->listen >= 0};
	int fds[T_N] = {a->books, door, stop_r, a->dfd, a->listen};
	int rc =
	    door < 0 ? -EBADF : vr_ho_sendfds(sp[0], &msg, sizeof(msg), fds, T_N - !msg.listen);
	if (door >= 0)
		close(door);
	close(sp[0]);
	if (rc < 0) {
		close(sp[1]);
		return -1;
	}
	return sp[1];
}

int vr_serve_start(struct vr_serve **out, const struct vr_serve_args *a)
{
	*out = NULL;
	struct vr_serve *s = calloc(1, sizeof(*s));
	struct serve_thread *t = calloc(1, sizeof(*t));
	struct shared *sh = calloc(1, sizeof(*sh));
	int p[2] = {-1, -1}, h = -1;
	if (!s || !t || !sh || pipe2(p, O_CLOEXEC) != 0 || (h = hand_off(a, p[0])) < 0 ||
	    fd_take(&s->stop_w, p[1]) != 0 || fd_take(&s->handoff, h) != 0) {
		if (p[0] >= 0)
			close(p[0]), close(p[1]);
		if (h >= 0)
			close(h);
		free(s);
		free(t);
		free(sh);
		return -EMFILE;
	}
	close(p[0]); /* the thread's copy is in flight */
	t->handoff = h;
	t->key = a->key;
	t->owner = vr_owner();
	t->notice = a->notice;
	snprintf(t->group, sizeof(t->group), "%s", a->group);
	snprintf(t->dir, sizeof(t->dir), "%s", a->dir ? a->dir : "");
	sem_init(&sh->taken, 0, 0);
	sem_init(&sh->ended, 0, 0);
	atomic_store(&sh->refs, 2);
	t->sh = s->sh = sh;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, VR_SERVE_STACK);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	int rc = pthread_create(&th, &attr, serve_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		close(h);
		close(p[1]);
		sem_destroy(&sh->taken);
		sem_destroy(&sh->ended);
		free(sh);
		free(t);
		free(s);
		return -rc;
	}
	s->th = th;
	(void)pthread_setname_np(th, "vramctl-books");
	/* The join returns once the thread holds its descriptors: a program
	 * that closes all of its own after its first allocation leaves it
	 * answering. Bounded: a thread that has not run by then takes them
	 * later (its hand-off stays open until the member leaves). */
	(void)wait_for(&sh->taken);
	*out = s;
	return 0;
}

/* Closes what the member's side holds in this process's table: the stop
 * pipe's write end, its copy of the hand-off socket, and, in a fork child
 * of a thread that works in the program's table, the child's copies of the
 * thread's descriptors. */
static void drop_side(struct vr_serve *s, int child)
{
	if (fd_ok(&s->stop_w))
		close(s->stop_w.fd);
	if (fd_ok(&s->handoff))
		close(s->handoff.fd);
	if (child && atomic_load(&s->sh->table) == TABLE_SHARED)
		for (int i = 0; i < T_N; i++)
			if (fd_ok(&s->sh->t[i]))
				close(s->sh->t[i].fd);
	if (child) { /* its copy of the shared part: no thread here holds it */
		sem_destroy(&s->sh->taken);
		sem_destroy(&s->sh->ended);
		free(s->sh);
	} else {
		shared_put(s->sh);
	}
	free(s);
}

void vr_serve_stop(struct vr_serve *s)
{
	if (!s)
		return;
	/* Once it has ended, a member that left answers no more: the next
	 * joiner of a group it was the last of finds nobody listening. */
	int ended = 0;
	if (fd_ok(&s->stop_w)) {
		char c = 1;
		ended = write(s->stop_w.fd, &c, 1) == 1 && wait_for(&s->sh->ended) == 0;
	}
	/* Joined once it has ended (it only frees its state then): no thread
	 * of ours is still on its way out when the program next forks, where
	 * an allocator without fork handlers (a sanitizer's) could be left
	 * locked in the child. Else detached: its end frees it. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += VR_SERVE_WAIT_S;
	if (!ended || pthread_timedjoin_np(s->th, NULL, &until) != 0)
		pthread_detach(s->th);
	drop_side(s, 0);
}

void vr_serve_forget(struct vr_serve *s)
{
	if (s)
		drop_side(s, 1);
}
