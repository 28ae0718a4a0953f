/*
 * devbook.c - a process's view of a device book (devbook.h): the book
 * mapped read-only, its group's entry, what a borrow is checked against,
 * its pending bytes on the board and its held bytes in the group's
 * semaphores. Nothing here takes or waits for a lock another process can
 * hold: the book is copied under its seqlock, the board is asked with
 * F_OFD_GETLK, this process's own threads share a mutex.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/siphash.h"
#include "common/text.h"
#include "registry/devboard.h"
#include "registry/devbook.h"
#include "registry/devheld.h"
#include "registry/util.h"

struct vr_devbook {
	int fd; /* the book, read-only: the board's locks are on it */
	const struct vr_devfile *f;
	dev_t dev; /* the book's identity, to close fd only while it is the book */
	ino_t ino;
	/* This process's group: its user and name, the entry found (-1:
	 * none) and its generation then. */
	uint32_t uid;
	uint64_t ident;
	int entry;
	uint64_t gen;
	struct vr_devholder self;
	/* Whether the entry's processes were alive, and when that was asked
	 * (when this process is not one of its holders). */
	int alive;
	_Atomic uint64_t alive_ns;
	pthread_mutex_t mu; /* the board lock's length, between this process's threads */
	struct vr_board board;
	struct vr_heldpub held;
	/* What this process learned of the other entries, each for one
	 * generation of it: its semaphore set checked (1) or found not the
	 * entry's (-1). */
	struct seen {
		_Atomic uint64_t gen;
		atomic_int set;
	} seen[VR_DEVBOOK_GROUPS];
};

int vr_devbook_dir(char *buf, size_t len)
{
	const char *e = secure_getenv(VR_ENV_DEVICE_DIR);
	if (!buf || len == 0)
		return -EINVAL;
	/* A relative one names other books in every working directory. */
	if (e && *e && *e != '/')
		return -EINVAL;
	int n = snprintf(buf, len, "%s", e && *e ? e : VR_DEVBOOK_DEFAULT_DIR);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

uint64_t vr_devbook_ident(uint64_t secret)
{
	static const unsigned char key[16] = "vramctl-devbook2";
	unsigned char m[8];
	for (int i = 0; i < 8; i++)
		m[i] = (unsigned char)(secret >> 8 * i);
	uint64_t h = vr_siphash24(key, m, sizeof m);
	return h ? h : 1;
}

int vr_devbook_open(const char *dir, const unsigned char uuid[16], struct vr_devbook **out,
                    char *err, size_t errlen)
{
	char dirbuf[4096];
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!dir) {
		int rc = vr_devbook_dir(dirbuf, sizeof dirbuf);
		if (rc < 0) {
			vr_seterr(err, errlen, "device book directory: " VR_ENV_DEVICE_DIR " is %s",
			          rc == -EINVAL ? "not an absolute path" : "too long");
			return rc;
		}
		dir = dirbuf;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT; /* no books: nobody holds a guarantee */
		vr_seterr(err, errlen, "device book directory %s: %s", dir,
		          e == ELOOP || e == ENOTDIR ? "not a directory (a symlink?)"
		                                     : strerror(e));
		return e == ELOOP || e == ENOTDIR ? -EPERM : -e;
	}
	const char *why = "";
	int rc = vr__devdir_check(dfd, &why);
	if (rc < 0) {
		close(dfd);
		vr_seterr(err, errlen, "device book directory %s: %s", dir, why);
		return rc;
	}
	int fd;
	const struct vr_devfile *f;
	rc = vr__devbook_map(dfd, dir, uuid, &fd, &f, err, errlen);
	close(dfd);
	if (rc < 0)
		return rc;
	struct vr_devbook *b = calloc(1, sizeof *b);
	if (!b) {
		munmap((void *)f, VR_DEVBOOK_SIZE);
		close(fd);
		vr_seterr(err, errlen, "device book: out of memory");
		return -ENOMEM;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		b->dev = st.st_dev;
		b->ino = st.st_ino;
	}
	b->fd = fd;
	b->f = f;
	b->entry = -1;
	b->board.base = -1;
	pthread_mutex_init(&b->mu, NULL);
	vr__held_init(&b->held);
	*out = b;
	return 0;
}

const _Atomic uint64_t *vr_devbook_guaranteed_word(const struct vr_devbook *b)
{
	return &b->f->h.guaranteed;
}

uint64_t vr_devbook_capacity(const struct vr_devbook *b)
{
	return b->f->h.capacity;
}

/* The snapshot's live entry of (uid, ident), or -1. */
static int find_in(const struct vr_devsnap *s, uint32_t uid, uint64_t ident)
{
	for (int k = 0; k < s->n; k++)
		if (s->e[k].uid == uid && s->e[k].ident == ident && vr__deventry_alive(&s->e[k], 0))
			return k;
	return -1;
}

/* A copy of the book's used entries (malloc'ed: 20 KiB), or NULL with
 * *rc the reason (-ENOMEM, or vr__devbook_snap's). */
static struct vr_devsnap *snap(const struct vr_devbook *b, int *rc)
{
	struct vr_devsnap *s = malloc(sizeof *s);
	*rc = s ? vr__devbook_snap(b->f, s) : -ENOMEM;
	if (*rc < 0) {
		free(s);
		return NULL;
	}
	return s;
}

int64_t vr_devbook_find(struct vr_devbook *b, uint32_t uid, uint64_t ident,
                        const struct vr_devholder *self, int publish)
{
	int rc;
	struct vr_devsnap *s = snap(b, &rc);
	if (!s)
		return rc;
	b->uid = uid;
	b->ident = ident;
	b->self = *self;
	b->entry = -1;
	int k = find_in(s, uid, ident);
	int64_t g = 0;
	if (k >= 0) {
		b->entry = s->idx[k];
		b->gen = s->e[k].gen;
		b->alive = 1;
		atomic_store_explicit(&b->alive_ns, vr_now_ns(), memory_order_relaxed);
		g = (int64_t)s->e[k].guarantee;
		if (publish)
			vr__held_start(&b->held, &s->e[k]);
	}
	free(s);
	return g;
}

uint64_t vr_devbook_own(struct vr_devbook *b)
{
	int i = b->entry;
	if (i < 0)
		return 0;
	const struct vr_deventry *e = &b->f->e[i];
	for (int t = 0; t < 1000; t++) {
		uint64_t s1 = atomic_load_explicit(&b->f->h.seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		int same = e->used == 1 && e->gen == b->gen && e->uid == b->uid &&
		           e->ident == b->ident,
		    mine = 0;
		uint64_t g = e->guarantee;
		for (int k = 0; k < VR_DEVBOOK_HOLDERS && same && !mine; k++)
			mine =
			    e->holder[k].pid == b->self.pid && e->holder[k].start == b->self.start;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&b->f->h.seq, memory_order_relaxed) != s1)
			continue;
		if (!same)
			return 0;
		if (mine)
			return g; /* alive: this process is */
		uint64_t now = vr_now_ns(),
		         then = atomic_load_explicit(&b->alive_ns, memory_order_relaxed);
		if (now - then >= VR_DEVBOOK_ALIVE_NS) {
			struct vr_deventry copy;
			memcpy(&copy, e, sizeof copy);
			b->alive = vr__deventry_alive(&copy, 0);
			atomic_store_explicit(&b->alive_ns, now, memory_order_relaxed);
		}
		return b->alive ? g : 0;
	}
	return 0;
}

/* Whether entry k of the copy s has its set, checked once per generation
 * of the entry (vr__held_valid). */
static int set_ok(struct vr_devbook *b, const struct vr_devsnap *s, int k)
{
	struct seen *x = &b->seen[s->idx[k]];
	const struct vr_deventry *e = &s->e[k];
	if (atomic_load_explicit(&x->gen, memory_order_acquire) != e->gen ||
	    !atomic_load_explicit(&x->set, memory_order_relaxed)) {
		atomic_store_explicit(&x->set, vr__held_valid(e) ? 1 : -1, memory_order_relaxed);
		atomic_store_explicit(&x->gen, e->gen, memory_order_release);
	}
	return atomic_load_explicit(&x->set, memory_order_relaxed) > 0;
}

int vr_devbook_state(struct vr_devbook *b, struct vr_devbook_state *st)
{
	int rc;
	memset(st, 0, sizeof *st);
	struct vr_devsnap *s = snap(b, &rc);
	if (!s)
		return rc;
	uint64_t most = 0;
	for (int k = 0; k < s->n; k++) {
		const struct vr_deventry *e = &s->e[k];
		int own = b->entry == s->idx[k] && e->gen == b->gen && e->uid == b->uid &&
		          e->ident == b->ident;
		if (!vr__deventry_alive(e, 0))
			continue; /* its processes are gone: it ends at the next writer */
		if (own) {
			st->own = e->guarantee;
			continue;
		}
		uint64_t held = set_ok(b, s, k) ? vr__held_sum(e) : 0,
		         unused = e->guarantee > held ? e->guarantee - held : 0;
		st->unused = vr__sat_add(st->unused, unused);
		if (unused > most) {
			most = unused;
			memcpy(st->top.group, e->group, sizeof st->top.group);
			st->top.group[sizeof st->top.group - 1] = '\0';
			st->top.uid = e->uid;
			st->top.guarantee = e->guarantee;
			st->top.held = held;
			st->top.pid = 0;
			for (int i = 0; i < VR_DEVBOOK_HOLDERS && !st->top.pid; i++)
				if (vr__devholder_alive(&e->holder[i], 0))
					st->top.pid = e->holder[i].pid;
		}
	}
	free(s);
	return 0;
}

/* Our descriptor is still the book: a program that closed it and opened
 * something else under its number would get our locks. */
static int still_ours(const struct vr_devbook *b)
{
	struct stat st;
	return fstat(b->fd, &st) == 0 && st.st_dev == b->dev && st.st_ino == b->ino;
}

int vr_devbook_pending_add(struct vr_devbook *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->mu);
	int rc = still_ours(b) ? vr__board_grow(b->fd, &b->board, bytes) : -EBADF;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void vr_devbook_pending_sub(struct vr_devbook *b, uint64_t bytes)
{
	pthread_mutex_lock(&b->mu);
	vr__board_shrink(b->fd, &b->board, bytes);
	pthread_mutex_unlock(&b->mu);
}

int vr_devbook_pending_others(struct vr_devbook *b, uint64_t *sum)
{
	/* Our descriptor was checked when our bytes went on the board. A
	 * region another lock starts at too is left for one that none does. */
	for (int t = 0;; t++) {
		*sum = 0;
		pthread_mutex_lock(&b->mu);
		struct vr_board mine = b->board;
		pthread_mutex_unlock(&b->mu);
		int rc = vr__board_others(b->fd, &mine, sum);
		if (rc != -EADDRINUSE)
			return rc;
		pthread_mutex_lock(&b->mu);
		rc = b->board.base == mine.base ? vr__board_move(b->fd, &b->board) : 0;
		pthread_mutex_unlock(&b->mu);
		if (rc < 0 || t == 8)
			return -EBUSY;
	}
}

void vr_devbook_held(struct vr_devbook *b, int64_t delta)
{
	vr__held_move(&b->held, delta);
}

/* Unmaps; closes fd only while it is still the book (the program may have
 * closed ours and opened something else under its number). */
static void release(struct vr_devbook *b)
{
	munmap((void *)b->f, VR_DEVBOOK_SIZE);
	if (still_ours(b))
		close(b->fd);
	pthread_mutex_destroy(&b->mu);
	pthread_mutex_destroy(&b->held.mu);
	free(b);
}

void vr_devbook_close(struct vr_devbook *b)
{
	if (!b)
		return;
	/* Closing the description drops its board lock; the held units go
	 * back with the process (SEM_UNDO), or here. */
	vr__held_move(&b->held, -(int64_t)b->held.bytes);
	release(b);
}

void vr_devbook_forget(struct vr_devbook *b)
{
	if (b)
		release(b);
}
