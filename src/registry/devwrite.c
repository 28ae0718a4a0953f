/*
 * devwrite.c - root's side of the device book (devbook.h): making a book,
 * admitting a guarantee (the one place that decides it), a holder leaving,
 * the service adopting entries, and ending entries whose processes are
 * all gone.
 *
 * Writers are root processes only (launchers, the guard service, the
 * library in a root process); they go one at a time under an OFD lock on
 * <dir>/vramctl-dev.lock, a 0600 file of root's that no one else can open,
 * so no other user can hold up a writer. Entries change inside the book's
 * seqlock (no system call in between), so readers always get a whole
 * copy; a writer killed inside one leaves the counter odd, which the next
 * writer puts right.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/size.h"
#include "common/text.h"
#include "registry/devboard.h"
#include "registry/devbook.h"
#include "registry/devheld.h"
#include "registry/util.h"

/* The longest a writer waits for another writer (root's only). */
#define WRITER_BOUND_NS (10ull * 1000 * 1000 * 1000)

/* A writer's hold on one book. */
struct wr {
	int dfd, lockfd, fd;
	struct vr_devfile *f;
	char dir[4096];
};

static void wr_close(struct wr *w)
{
	if (w->f)
		munmap(w->f, VR_DEVBOOK_SIZE);
	if (w->fd >= 0)
		close(w->fd);
	if (w->lockfd >= 0)
		close(w->lockfd); /* drops the writers' lock */
	if (w->dfd >= 0)
		close(w->dfd);
}

/* The directory, made (0755) when it is the default one and missing,
 * checked. */
static int wr_dir(struct wr *w, const char *dir, char *err, size_t errlen)
{
	if (geteuid() != 0) {
		vr_seterr(err, errlen, "only root writes the device book");
		return -EPERM;
	}
	if (!dir) {
		int rc = vr_devbook_dir(w->dir, sizeof w->dir);
		if (rc < 0) {
			vr_seterr(err, errlen, "device book directory: $VRAMCTL_DEVICE_DIR is %s",
			          rc == -EINVAL ? "not an absolute path" : "too long");
			return rc;
		}
		if (!strcmp(w->dir, VR_DEVBOOK_DEFAULT_DIR) && mkdir(w->dir, 0755) == 0)
			chmod(w->dir, 0755); /* whatever the umask */
	} else {
		snprintf(w->dir, sizeof w->dir, "%s", dir);
	}
	w->dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->dfd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "device book directory %s: %s", w->dir, strerror(e));
		return -e;
	}
	const char *why = "";
	int rc = vr__devdir_check(w->dfd, &why);
	if (rc < 0)
		vr_seterr(err, errlen, "device book directory %s: %s", w->dir, why);
	return rc;
}

/* The writers' lock: root's 0600 file, an OFD write lock on its byte 0. */
static int wr_lock(struct wr *w, char *err, size_t errlen)
{
	w->lockfd = openat(w->dfd, VR_DEVBOOK_LOCKNAME,
	                   O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	struct stat st;
	if (w->lockfd < 0 || fstat(w->lockfd, &st) != 0) {
		int e = errno;
		vr_seterr(err, errlen, "device book lock %s/%s: %s", w->dir, VR_DEVBOOK_LOCKNAME,
		          strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0) {
		vr_seterr(err, errlen, "device book lock %s/%s: not root's regular file", w->dir,
		          VR_DEVBOOK_LOCKNAME);
		return -EPERM;
	}
	if (st.st_mode & 077)
		fchmod(w->lockfd, 0600);
	int rc = vr_ofd_lock(w->lockfd, 0, 1, vr_now_ns() + WRITER_BOUND_NS);
	if (rc < 0)
		vr_seterr(err, errlen, "device book lock %s/%s: %s", w->dir, VR_DEVBOOK_LOCKNAME,
		          rc == -ETIMEDOUT ? "another writer held it 10 s" : strerror(-rc));
	return rc;
}

/* A book about to be replaced (damaged: its header): the semaphores its
 * entries name, where they still are root's sets for those entries, go
 * first (they would outlive it). */
static void forget_sets(struct wr *w, const char *name)
{
	int fd = openat(w->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	    st.st_size == (off_t)VR_DEVBOOK_SIZE) {
		struct vr_devfile *f = mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ, MAP_SHARED, fd, 0);
		if (f != MAP_FAILED) {
			for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
				if (f->e[i].used == 1)
					vr__held_remove(&f->e[i]);
			munmap(f, VR_DEVBOOK_SIZE);
		}
	}
	close(fd);
}

/* Writes a new book (capacity) under a temporary name and renames it into
 * place: over a file that is not a usable book (only root can have put it
 * there). 0 or -errno. */
static int wr_create(struct wr *w, const char *name, const unsigned char uuid[16],
                     uint64_t capacity, char *err, size_t errlen)
{
	struct vr_devfile *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->h.version = VR_DEVBOOK_VERSION;
	f->h.hdr_size = VR_DEVBOOK_HDR_SIZE;
	f->h.total_size = VR_DEVBOOK_SIZE;
	f->h.groups = VR_DEVBOOK_GROUPS;
	f->h.holders = VR_DEVBOOK_HOLDERS;
	memcpy(f->h.uuid, uuid, 16);
	f->h.capacity = capacity;
	f->h.created = (uint64_t)time(NULL);
	f->h.magic = VR_DEVBOOK_MAGIC;
	struct vr_tmp_file t = {.dfd = w->dfd,
	                        .dir = w->dir,
	                        .name = name,
	                        .what = "device book",
	                        .stem = name,
	                        .mode = 0644,
	                        .buf = f,
	                        .len = sizeof *f};
	char tmp[VR_DEVBOOK_NAME_MAX + 48];
	int fd = vr_tmp_write(&t, tmp, sizeof tmp, err, errlen);
	free(f);
	if (fd < 0)
		return fd;
	close(fd);
	if (renameat(w->dfd, tmp, w->dfd, name) != 0) {
		int e = errno;
		unlinkat(w->dfd, tmp, 0);
		vr_seterr(err, errlen, "cannot create device book %s/%s: %s", w->dir, name,
		          strerror(e));
		return -e;
	}
	return 0;
}

/* The book of uuid, mapped read-write (made when missing or unusable and
 * capacity is not 0). */
static int wr_book(struct wr *w, const unsigned char uuid[16], uint64_t capacity, char *err,
                   size_t errlen)
{
	char name[VR_DEVBOOK_NAME_MAX];
	vr__devbook_name(uuid, name);
	for (int tries = 0; tries < 2; tries++) {
		int rfd;
		const struct vr_devfile *ro;
		char why[512] = "";
		int rc = vr__devbook_map(w->dfd, w->dir, uuid, &rfd, &ro, why, sizeof why);
		if (rc == 0) {
			munmap((void *)ro, VR_DEVBOOK_SIZE);
			close(rfd);
			w->fd = openat(w->dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			void *p = w->fd < 0 ? MAP_FAILED
			                    : mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ | PROT_WRITE,
			                           MAP_SHARED, w->fd, 0);
			if (p == MAP_FAILED) {
				int e = errno;
				vr_seterr(err, errlen, "device book %s/%s: %s", w->dir, name,
				          strerror(e));
				return -e;
			}
			w->f = p;
			return 0;
		}
		if (!capacity || (rc != -ENOENT && rc != -EBADMSG && rc != -EPERM)) {
			vr_seterr(err, errlen, "%s", why[0] ? why : strerror(-rc));
			return rc;
		}
		if (rc == -EBADMSG)
			forget_sets(w, name);
		rc = wr_create(w, name, uuid, capacity, err, errlen);
		if (rc < 0)
			return rc;
	}
	vr_seterr(err, errlen, "device book %s/%s: made, but cannot be used", w->dir, name);
	return -EBADMSG;
}

/* Opens dir (NULL: the default) and uuid's book for writing, the writers'
 * lock held. */
static int wr_open(struct wr *w, const char *dir, const unsigned char uuid[16], uint64_t capacity,
                   char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	w->dfd = w->lockfd = w->fd = -1;
	int rc = wr_dir(w, dir, err, errlen);
	if (rc == 0)
		rc = wr_lock(w, err, errlen);
	if (rc == 0)
		rc = wr_book(w, uuid, capacity, err, errlen);
	if (rc < 0)
		wr_close(w);
	return rc;
}

/* An existing book, for the writes that make none. */
static int wr_existing(struct wr *w, const char *dir, const unsigned char uuid[16])
{
	char err[256];
	return wr_open(w, dir, uuid, 0, err, sizeof err);
}

/* The seqlock: begin (odd), end (even, the header's words recomputed). */
static void wbegin(struct vr_devfile *f)
{
	/* A writer killed inside a change left it odd: it stays odd now. A
	 * read-modify-write that no later write passes (a fence would do as
	 * well, but ThreadSanitizer does not model fences). */
	atomic_fetch_or_explicit(&f->h.seq, 1, memory_order_seq_cst);
}

static void wend(struct vr_devfile *f)
{
	uint64_t sum = 0, mask = 0;
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		if (f->e[i].used == 1) {
			sum = vr__sat_add(sum, f->e[i].guarantee);
			mask |= 1ull << i;
		}
	atomic_store_explicit(&f->h.used_mask, mask, memory_order_relaxed);
	atomic_store_explicit(&f->h.guaranteed, sum, memory_order_relaxed);
	uint64_t s = atomic_load_explicit(&f->h.seq, memory_order_relaxed);
	atomic_store_explicit(&f->h.seq, s + 1, memory_order_release);
}

/* Ends entry i: out of the book first, then its semaphores. */
static void end_entry(struct vr_devfile *f, int i)
{
	struct vr_deventry copy = f->e[i];
	wbegin(f);
	f->e[i].used = 0;
	wend(f);
	vr__held_remove(&copy);
}

/* Ends the entries whose processes are all gone (start times checked). */
static void reclaim(struct vr_devfile *f)
{
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		if (f->e[i].used == 1 && !vr__deventry_alive(&f->e[i], 1))
			end_entry(f, i);
}

static int find(const struct vr_devfile *f, uint32_t uid, uint64_t ident)
{
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		if (f->e[i].used == 1 && f->e[i].uid == uid && f->e[i].ident == ident)
			return i;
	return -1;
}

/* Adds h to entry i's holders (inside the seqlock): into a free slot or
 * one whose process is gone; nothing when it is there or all are live. */
static void add_holder(struct vr_devfile *f, int i, const struct vr_devholder *h)
{
	struct vr_deventry *e = &f->e[i];
	int slot = -1;
	for (int k = 0; k < VR_DEVBOOK_HOLDERS; k++) {
		if (e->holder[k].pid == h->pid && e->holder[k].start == h->start)
			return;
		if (slot < 0 && !vr__devholder_alive(&e->holder[k], 1))
			slot = k;
	}
	if (slot < 0)
		return;
	wbegin(f);
	e->holder[slot] = *h;
	wend(f);
}

/* What the others hold back: their unused guarantees (all of entry
 * `self`'s group excepted). */
static uint64_t unused_others(const struct vr_devfile *f, int self)
{
	uint64_t sum = 0;
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++) {
		const struct vr_deventry *e = &f->e[i];
		if (i == self || e->used != 1)
			continue;
		uint64_t held = vr__held_read(e);
		sum = vr__sat_add(sum, e->guarantee > held ? e->guarantee - held : 0);
	}
	return sum;
}

static void say_nofit(const struct vr_devbook_ask *a, uint64_t capacity, uint64_t card_free,
                      uint64_t unused, uint64_t pending, char *err, size_t errlen)
{
	uint64_t v[5] = {card_free, unused, pending, a->guarantee, capacity};
	char t[5][32];
	int d = vr_size_digits(v, 5, 0);
	for (int k = 0; k < 5; k++)
		vr_format_size_digits(v[k], d, t[k], sizeof t[k]);
	vr_seterr(err, errlen,
	          "the guarantee of %s does not fit on the device now: asked %s; the card (%s) "
	          "has %s free, other groups' unused guarantees are %s, borrows in flight %s",
	          a->group && *a->group ? a->group : "this group", t[3], t[4], t[0], t[1], t[2]);
}

/* Entry i, published (a borrower checking from now on counts it; one that
 * checked before has its pending on the board, read now), against the card
 * now, where what was placed meanwhile shows: `want` bytes of it not on the
 * card yet must fit in the card's free memory beside the other groups'
 * unused guarantees and the borrows in flight. 0, or a negative errno with
 * err (-ENOSPC: the numbers). */
static int fits_now(struct wr *w, int i, const struct vr_devbook_ask *a, uint64_t want, char *err,
                    size_t errlen)
{
	struct vr_devfile *f = w->f;
	uint64_t pending = 0, card_free = 0, unused = unused_others(f, i);
	int rc = vr__board_others(w->fd, NULL, &pending);
	if (rc < 0) {
		vr_seterr(err, errlen, "the borrows in flight cannot be counted (%s)",
		          rc == -E2BIG ? "too many locks on the board" : strerror(-rc));
		return rc;
	}
	if ((rc = a->card_free ? a->card_free(a->arg, &card_free) : -ENOSYS) < 0) {
		vr_seterr(err, errlen, "the card's free memory cannot be read");
		return -EIO;
	}
	if (vr__sat_add(vr__sat_add(unused, pending), want) > card_free) {
		say_nofit(a, f->h.capacity, card_free, unused, pending, err, errlen);
		return -ENOSPC;
	}
	return 0;
}

/* A new entry for a, checked against the card once published. */
static int admit_new(struct wr *w, const struct vr_devbook_ask *a, char *err, size_t errlen)
{
	struct vr_devfile *f = w->f;
	if (a->guarantee == 0 || a->ident == 0) {
		vr_seterr(err, errlen, "a guarantee needs an amount and a group");
		return -EINVAL;
	}
	if (a->guarantee > f->h.capacity) {
		char g[32], c[32];
		vr_seterr(err, errlen, "the guarantee %s is above the card's %s",
		          vr_format_size(a->guarantee, g, sizeof g),
		          vr_format_size(f->h.capacity, c, sizeof c));
		return -ENOSPC;
	}
	int i = 0;
	while (i < VR_DEVBOOK_GROUPS && f->e[i].used == 1)
		i++;
	if (i == VR_DEVBOOK_GROUPS) {
		vr_seterr(err, errlen, "%d groups already hold a guarantee on the device",
		          VR_DEVBOOK_GROUPS);
		return -EUSERS;
	}
	struct vr_deventry e;
	memset(&e, 0, sizeof e);
	int rc = vr__held_create(&e, a->uid, f->h.capacity);
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot make the group's held counts: %s", strerror(-rc));
		return rc;
	}
	e.used = 1;
	e.uid = a->uid;
	e.ident = a->ident;
	e.guarantee = a->guarantee;
	e.gen = f->e[i].gen + 1;
	e.manager = a->manager;
	e.holder[0] = a->holder;
	e.admitted = (uint64_t)time(NULL);
	vr_text_copy(e.group, sizeof e.group, a->group ? a->group : "");
	wbegin(f);
	f->e[i] = e;
	wend(f);
	rc = fits_now(w, i, a, a->guarantee, err, errlen);
	if (rc < 0)
		end_entry(f, i);
	return rc;
}

int vr_devbook_admit(const char *dir, const unsigned char uuid[16], const struct vr_devbook_ask *a,
                     uint64_t *given, char *err, size_t errlen)
{
	struct wr w;
	*given = 0;
	int rc = wr_open(&w, dir, uuid, a->capacity, err, errlen);
	if (rc < 0)
		return rc;
	struct vr_devfile *f = w.f;
	if (a->capacity && f->h.capacity != a->capacity) {
		wbegin(f); /* the driver's figure, not one a writer chose */
		f->h.capacity = a->capacity;
		wend(f);
	}
	reclaim(f);
	int i = find(f, a->uid, a->ident);
	if (i >= 0) {
		add_holder(f, i, &a->holder);
		*given = f->e[i].guarantee;
		rc = 1;
	} else if ((rc = admit_new(&w, a, err, errlen)) == 0) {
		*given = a->guarantee;
	}
	wr_close(&w);
	return rc;
}

int vr_devbook_regrant(const char *dir, const unsigned char uuid[16],
                       const struct vr_devbook_ask *a, uint64_t *old, char *err, size_t errlen)
{
	struct wr w;
	*old = 0;
	int rc = wr_existing(&w, dir, uuid);
	int i = rc < 0 ? -1 : (reclaim(w.f), find(w.f, a->uid, a->ident));
	if (i < 0) {
		vr_seterr(err, errlen,
		          "group %s holds no guarantee on the device: one is given as the group "
		          "starts (vramctl run --guarantee)",
		          a->group && *a->group ? a->group : "?");
		if (rc == 0)
			wr_close(&w);
		return -ENOENT;
	}
	struct vr_devfile *f = w.f;
	*old = f->e[i].guarantee;
	if (a->guarantee > f->h.capacity) {
		char g[32], c[32];
		vr_seterr(err, errlen, "the guarantee %s is above the card's %s",
		          vr_format_size(a->guarantee, g, sizeof g),
		          vr_format_size(f->h.capacity, c, sizeof c));
		wr_close(&w);
		return -ENOSPC;
	}
	wbegin(f);
	f->e[i].guarantee = a->guarantee;
	wend(f);
	/* A raise, published (a borrower that checks from now on counts it),
	 * then checked as an admission is: what the group has not placed of
	 * it must be free beside the others' unused guarantees and the
	 * borrows in flight; else taken back. */
	if (a->guarantee > *old) {
		uint64_t held = vr__held_read(&f->e[i]);
		rc = fits_now(&w, i, a, a->guarantee > held ? a->guarantee - held : 0, err, errlen);
		if (rc < 0) {
			wbegin(f);
			f->e[i].guarantee = *old;
			wend(f);
		}
	}
	wr_close(&w);
	return rc < 0 ? rc : 0;
}

int vr_devbook_make(const char *dir, const unsigned char uuid[16], uint64_t capacity, char *err,
                    size_t errlen)
{
	struct wr w;
	if (capacity == 0) {
		vr_seterr(err, errlen, "device book: a device of 0 bytes");
		return -EINVAL;
	}
	int rc = wr_open(&w, dir, uuid, capacity, err, errlen);
	if (rc == 0) {
		reclaim(w.f);
		wr_close(&w);
	}
	return rc;
}

/* pid leaves the entry of (uid, ident), which ends when none of its
 * processes is alive (or at once, with end). */
static int leave(const char *dir, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                 int32_t pid, int end)
{
	struct wr w;
	int rc = wr_existing(&w, dir, uuid);
	if (rc < 0)
		return rc;
	struct vr_devfile *f = w.f;
	int i = find(f, uid, ident);
	if (i >= 0) {
		struct vr_deventry *e = &f->e[i];
		wbegin(f);
		for (int k = 0; k < VR_DEVBOOK_HOLDERS; k++)
			if (e->holder[k].pid == pid)
				memset(&e->holder[k], 0, sizeof e->holder[k]);
		wend(f);
		if (end || !vr__deventry_alive(e, 1))
			end_entry(f, i);
	}
	reclaim(f);
	wr_close(&w);
	return i >= 0 ? 0 : -ENOENT;
}

int vr_devbook_leave(const char *dir, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                     int32_t pid)
{
	return leave(dir, uuid, uid, ident, pid, 0);
}

int vr_devbook_end(const char *dir, const unsigned char uuid[16], uint32_t uid, uint64_t ident)
{
	return leave(dir, uuid, uid, ident, 0, 1);
}

int vr_devbook_adopt(const char *dir, const unsigned char uuid[16],
                     const struct vr_devholder *manager,
                     void (*adopt)(void *arg, const unsigned char uuid[16], uint32_t uid,
                                   uint64_t ident, const struct vr_devholder *h),
                     void *arg)
{
	struct wr w;
	int rc = wr_existing(&w, dir, uuid);
	if (rc < 0)
		return rc;
	struct vr_devfile *f = w.f;
	int n = 0;
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++) {
		struct vr_deventry *e = &f->e[i];
		if (e->used != 1 || !e->manager.pid || vr__devholder_alive(&e->manager, 1))
			continue;
		int live = 0;
		for (int k = 0; k < VR_DEVBOOK_HOLDERS; k++)
			if (vr__devholder_alive(&e->holder[k], 1)) {
				live++;
				adopt(arg, uuid, e->uid, e->ident, &e->holder[k]);
			}
		if (!live) {
			end_entry(f, i);
			continue;
		}
		wbegin(f);
		if (manager)
			e->manager = *manager;
		else
			memset(&e->manager, 0, sizeof e->manager);
		wend(f);
		n++;
	}
	reclaim(f);
	wr_close(&w);
	return n;
}
