/*
 * devbook.c - a process's use of a device book (devbook.h; layout in
 * devdoor.h): its line, its group's entry and admission, the book's lock,
 * reclaiming the dead, what other groups have not used of their
 * guarantees, and leaving.
 *
 * Every change to a line's or an entry's flag, and to the guaranteed word,
 * is made under the book's lock, in an order a death at any point leaves
 * harmless: a line is locked (its liveness byte) before it is marked used
 * and unlocked after it is marked free; an entry is written whole before
 * it is marked used and pointed to by a line only then; the guaranteed
 * word is recomputed from the entries by every holder that changes them.
 * Only a line's held word is written without the lock, by its owner.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/size.h"
#include "common/text.h"
#include "common/contract.h"
#include "registry/devbook.h"
#include "registry/util.h"

struct vr_devbook {
	int fd;              /* the door, read-write: the locks are on its bytes */
	void *keep;          /* an untouched PROT_NONE map of the door: keeps our locks
	                        should the program close fd behind our back */
	struct vr_devseg *s; /* the segment, attached read-write */
	struct vr_devhdr door;
	dev_t dev; /* the door's identity, to close fd only while it is the door */
	ino_t ino;
	int line;  /* our line, -1: none */
	int entry; /* our group's entry, -1: none */
	uint64_t guarantee;
	pthread_mutex_t mu; /* this process's threads, one at a time */
	const char *why;    /* damage last found */
	char why_buf[4400];
	char name[4200]; /* the door's path, for messages */
};

int vr_devbook_dir(char *buf, size_t len)
{
	const char *e = secure_getenv(VR_ENV_DEVICE_DIR);
	if (!buf || len == 0)
		return -EINVAL;
	/* A relative one names other books in every working directory. */
	if (e && *e && *e != '/')
		return -EINVAL;
	int n = snprintf(buf, len, "%s", e && *e ? e : "/dev/shm");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int vr_devbook_open(const char *dir, const unsigned char uuid[16], uint64_t capacity,
                    struct vr_devbook **out, char *err, size_t errlen)
{
	char dirbuf[4096];
	*out = NULL;
	if (capacity == 0) {
		vr_seterr(err, errlen, "device book: a device of 0 bytes");
		return -EINVAL;
	}
	if (!dir) {
		int rc = vr_devbook_dir(dirbuf, sizeof(dirbuf));
		if (rc < 0) {
			vr_seterr(err, errlen, "device book directory: " VR_ENV_DEVICE_DIR " is %s",
			          rc == -EINVAL ? "not an absolute path" : "too long");
			return rc;
		}
		dir = dirbuf;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot open the device book directory %s: %s", dir,
		          strerror(e));
		return -e;
	}
	struct vr_devbook *b = calloc(1, sizeof(*b));
	if (!b) {
		close(dfd);
		vr_seterr(err, errlen, "device book: out of memory");
		return -ENOMEM;
	}
	int rc = vr__devdoor_attach(dfd, dir, uuid, capacity, &b->fd, &b->door, &b->s, err, errlen);
	close(dfd);
	if (rc < 0) {
		free(b);
		return rc;
	}
	b->keep = mmap(NULL, VR_DEVDOOR_SIZE, PROT_NONE, MAP_SHARED, b->fd, 0);
	if (b->keep == MAP_FAILED)
		b->keep = NULL; /* best effort */
	struct stat st;
	if (fstat(b->fd, &st) == 0) {
		b->dev = st.st_dev;
		b->ino = st.st_ino;
	}
	b->line = b->entry = -1;
	pthread_mutex_init(&b->mu, NULL);
	char door_name[VR_DEVDOOR_NAME_MAX];
	vr__devdoor_name(uuid, door_name);
	snprintf(b->name, sizeof(b->name), "%s/%s", dir, door_name);
	*out = b;
	return 0;
}

const _Atomic uint64_t *vr_devbook_guaranteed_word(const struct vr_devbook *b)
{
	return &b->s->h.guaranteed;
}

uint64_t vr_devbook_guarantee(const struct vr_devbook *b)
{
	return b->entry >= 0 ? b->guarantee : 0;
}

const char *vr_devbook_why(const struct vr_devbook *b)
{
	return b->why;
}

static void damaged(struct vr_devbook *b, const char *why)
{
	snprintf(b->why_buf, sizeof(b->why_buf), "device book %s: %s", b->name, why);
	b->why = b->why_buf;
}

int vr_devbook_lock(struct vr_devbook *b)
{
	uint64_t end = vr_now_ns() + VR_DEVBOOK_LOCK_BOUND_NS;
	while (pthread_mutex_trylock(&b->mu) != 0) {
		if (vr_now_ns() > end)
			return -ETIMEDOUT;
		struct timespec ts = {.tv_nsec = 500000};
		nanosleep(&ts, NULL);
	}
	int rc = vr__devdoor_lock(b->fd, VR_DEVDOOR_LOCK_BYTE, 1);
	if (rc < 0) {
		pthread_mutex_unlock(&b->mu);
		return rc;
	}
	const char *why = NULL;
	if (vr__devseg_check(b->s, &b->door, &why) != 0) {
		damaged(b, why);
		vr_devbook_unlock(b);
		return -EBADMSG;
	}
	return 0;
}

void vr_devbook_unlock(struct vr_devbook *b)
{
	vr__devdoor_lock(b->fd, VR_DEVDOOR_LOCK_BYTE, 0);
	pthread_mutex_unlock(&b->mu);
}

/* Takes or drops (type F_UNLCK) line i's liveness lock. */
static int line_lock(int fd, int i, short type)
{
	struct flock fl = {
	    .l_type = type, .l_whence = SEEK_SET, .l_start = VR_DEVDOOR_LINE_BYTE(i), .l_len = 1};
	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

/* Lock held: the lines below the high-water mark, bounded whatever the
 * segment says. */
static uint32_t lines_hw(const struct vr_devseg *s)
{
	uint32_t hw = s->h.lines_hw;
	return hw > VR_DEVBOOK_LINES ? VR_DEVBOOK_LINES : hw;
}

/* Lock held: the sum of the used entries' guarantees, into the word. */
static uint64_t regive(struct vr_devseg *s)
{
	uint64_t sum = 0;
	for (int e = 0; e < VR_DEVBOOK_GROUPS; e++)
		if (s->e[e].used == 1)
			sum = vr__sat_add(sum, s->e[e].guarantee);
	atomic_store_explicit(&s->h.guaranteed, sum, memory_order_release);
	return sum;
}

/*
 * Lock held: frees the lines whose liveness byte nobody holds (their
 * processes are gone: killed or exited without closing), then the entries
 * no used line points to (the group's last member is gone), and sets the
 * guaranteed word and the high-water mark again. Our own line is ours.
 */
static void reclaim(struct vr_devbook *b)
{
	struct vr_devseg *s = b->s;
	unsigned char pointed[VR_DEVBOOK_GROUPS] = {0};
	uint32_t hw = lines_hw(s), top = 0;
	for (uint32_t i = 0; i < hw; i++) {
		struct vr_devline *l = &s->l[i];
		if (l->used != 1)
			continue;
		if ((int)i != b->line && !vr__devline_alive(b->fd, i)) {
			l->used = 0;
			continue;
		}
		top = i + 1;
		int32_t e = l->entry;
		if (e >= 0 && e < VR_DEVBOOK_GROUPS)
			pointed[e] = 1;
	}
	s->h.lines_hw = top;
	for (int e = 0; e < VR_DEVBOOK_GROUPS; e++)
		if (s->e[e].used == 1 && !pointed[e])
			s->e[e].used = 0;
	regive(s);
}

/* Lock held: takes a free line whose byte nobody holds: its index, or -1. */
static int take_line(struct vr_devbook *b, const struct vr_devbook_who *who)
{
	struct vr_devseg *s = b->s;
	for (int i = 0; i < VR_DEVBOOK_LINES; i++) {
		struct vr_devline *l = &s->l[i];
		if (l->used == 1 || vr__devline_alive(b->fd, (uint32_t)i) ||
		    line_lock(b->fd, i, F_RDLCK) != 0)
			continue;
		l->pid = who->pid;
		l->uid = who->uid;
		l->entry = -1;
		atomic_store_explicit(&l->held, 0, memory_order_relaxed);
		atomic_store_explicit(&l->pending, 0, memory_order_relaxed);
		atomic_store_explicit(&l->pending_ns, 0, memory_order_relaxed);
		l->used = 1;
		if ((uint32_t)i >= s->h.lines_hw)
			s->h.lines_hw = (uint32_t)i + 1;
		return i;
	}
	return -1;
}

/* Lock held: gives our line back, and its byte. */
static void drop_line(struct vr_devbook *b)
{
	b->s->l[b->line].used = 0;
	line_lock(b->fd, b->line, F_UNLCK);
	b->line = b->entry = -1;
	b->guarantee = 0;
}

/* Lock held: the bytes on the card of processes with no live line. */
static uint64_t outside_bytes(const struct vr_devseg *s, const struct vr_devbook_who *who)
{
	uint64_t sum = 0;
	uint32_t hw = lines_hw(s);
	for (int k = 0; who->procs && k < who->nprocs; k++) {
		int inside = 0;
		for (uint32_t i = 0; i < hw && !inside; i++)
			inside = s->l[i].used == 1 && s->l[i].pid == who->procs[k].pid;
		if (!inside)
			sum = vr__sat_add(sum, who->procs[k].bytes);
	}
	return sum;
}

/* Lock held: does who's guarantee fit beside the others' (given), what
 * processes outside the book hold, within the capacity? 0 with the
 * numbers in err when it does not. */
static int fits(struct vr_devbook *b, const struct vr_devbook_who *who, uint64_t given, char *err,
                size_t errlen)
{
	uint64_t cap = b->door.capacity, out = outside_bytes(b->s, who);
	if (vr__sat_add(vr__sat_add(given, who->guarantee), out) <= cap)
		return 1;
	uint64_t v[4] = {given, out, who->guarantee, cap};
	char t[4][32];
	int d = vr_size_digits(v, 4, 0);
	for (int k = 0; k < 4; k++)
		vr_format_size_digits(v[k], d, t[k], sizeof(t[k]));
	vr_seterr(err, errlen,
	          "the guarantee of %s does not fit on the device: guarantees given %s, "
	          "held outside vramctl %s, asked %s, capacity %s",
	          who->group && *who->group ? who->group : "this process", t[0], t[1], t[2], t[3]);
	return 0;
}

/* Lock held, our line taken: joins the group's entry or admits a new one. */
static int take_entry(struct vr_devbook *b, const struct vr_devbook_who *who, char *err,
                      size_t errlen)
{
	struct vr_devseg *s = b->s;
	int free_e = -1;
	for (int e = 0; e < VR_DEVBOOK_GROUPS; e++) {
		const struct vr_deventry *x = &s->e[e];
		if (x->used == 1 && x->uid == who->uid && x->group_key == who->group_key) {
			s->l[b->line].entry = e;
			b->entry = e;
			b->guarantee = x->guarantee;
			return 0;
		}
		if (x->used != 1 && free_e < 0)
			free_e = e;
	}
	if (who->guarantee == 0)
		return 0; /* a group without a guarantee here */
	if (!fits(b, who, regive(s), err, errlen))
		return -ENOSPC;
	if (free_e < 0) {
		vr_seterr(err, errlen,
		          "device book %s: %d groups already hold a guarantee on the device",
		          b->name, VR_DEVBOOK_GROUPS);
		return -EUSERS;
	}
	struct vr_deventry *x = &s->e[free_e];
	x->uid = who->uid;
	x->pid = who->pid;
	x->group_key = who->group_key;
	x->guarantee = who->guarantee;
	memset(x->group, 0, sizeof(x->group));
	(void)vr_text_copy(x->group, sizeof(x->group), who->group ? who->group : "");
	x->used = 1;
	s->l[b->line].entry = free_e;
	b->entry = free_e;
	b->guarantee = who->guarantee;
	regive(s);
	return 0;
}

int vr_devbook_join(struct vr_devbook *b, const struct vr_devbook_who *who, char *err,
                    size_t errlen)
{
	if (who->guarantee > 0 && who->group_key == 0) {
		vr_seterr(err, errlen, "device book: a guarantee needs a group");
		return -EINVAL;
	}
	int rc = vr_devbook_lock(b);
	if (rc < 0) {
		if (rc == -ETIMEDOUT)
			vr_seterr(err, errlen,
			          "device book %s: its lock is held by a process that does not let "
			          "go (stopped?)",
			          b->name);
		else
			vr_seterr(err, errlen, "%s", b->why ? b->why : strerror(-rc));
		return rc;
	}
	if (b->line >= 0) {
		vr_devbook_unlock(b);
		vr_seterr(err, errlen, "device book %s: this process is in it already", b->name);
		return -EALREADY;
	}
	reclaim(b);
	b->line = take_line(b, who);
	if (b->line < 0) {
		vr_devbook_unlock(b);
		vr_seterr(err, errlen, "device book %s: all %d lines are taken by live processes",
		          b->name, VR_DEVBOOK_LINES);
		return -EUSERS;
	}
	rc = who->group_key ? take_entry(b, who, err, errlen) : 0;
	if (rc < 0)
		drop_line(b);
	vr_devbook_unlock(b);
	return rc;
}

int vr_devbook_regrant(struct vr_devbook *b, const struct vr_devbook_who *who, uint64_t *old,
                       char *err, size_t errlen)
{
	int rc = vr_devbook_lock(b);
	*old = 0;
	if (rc < 0) {
		vr_seterr(err, errlen, "%s",
		          rc == -ETIMEDOUT
		              ? "the device book's lock is held by a process that does "
		                "not let go (stopped?)"
		          : b->why ? b->why
		                   : strerror(-rc));
		return rc;
	}
	struct vr_devseg *s = b->s;
	reclaim(b);
	int e = 0;
	while (e < VR_DEVBOOK_GROUPS && !(s->e[e].used == 1 && s->e[e].uid == who->uid &&
	                                  s->e[e].group_key == who->group_key))
		e++;
	if (e == VR_DEVBOOK_GROUPS) {
		vr_devbook_unlock(b);
		vr_seterr(err, errlen,
		          "group %s holds no guarantee on the device: one is given as the group "
		          "starts (vramctl run --guarantee)",
		          who->group ? who->group : "?");
		return -ENOENT;
	}
	*old = s->e[e].guarantee;
	uint64_t others = regive(s) - *old;
	if (who->guarantee > *old && !fits(b, who, others, err, errlen)) {
		vr_devbook_unlock(b);
		return -ENOSPC;
	}
	atomic_store_explicit((_Atomic uint64_t *)&s->e[e].guarantee, who->guarantee,
	                      memory_order_relaxed);
	regive(s);
	vr_devbook_unlock(b);
	return 0;
}

uint64_t vr_devbook_guarantee_now(const struct vr_devbook *b)
{
	if (b->entry < 0 || b->entry >= VR_DEVBOOK_GROUPS)
		return 0;
	return atomic_load_explicit((_Atomic uint64_t *)&b->s->e[b->entry].guarantee,
	                            memory_order_relaxed);
}

uint64_t vr_devbook_unused_others(struct vr_devbook *b, struct vr_devbook_holder *top)
{
	struct vr_devseg *s = b->s;
	const char *why = NULL;
	if (top)
		memset(top, 0, sizeof(*top));
	if (vr__devseg_check(s, &b->door, &why) != 0) {
		damaged(b, why);
		if (top)
			snprintf(top->group, sizeof(top->group), "(device book damaged)");
		return UINT64_MAX;
	}
	reclaim(b);
	uint64_t held[VR_DEVBOOK_GROUPS] = {0};
	uint32_t hw = lines_hw(s);
	for (uint32_t i = 0; i < hw; i++) {
		int32_t e = s->l[i].entry;
		/* A line's count below 0 (more taken off than put on: a
		 * stray write) counts as nothing held: its group's unused
		 * guarantee is then the most it can be. */
		uint64_t h = atomic_load_explicit(&s->l[i].held, memory_order_relaxed);
		if (s->l[i].used == 1 && e >= 0 && e < VR_DEVBOOK_GROUPS && (int64_t)h > 0)
			held[e] = vr__sat_add(held[e], h);
	}
	uint64_t sum = 0, most = 0;
	for (int e = 0; e < VR_DEVBOOK_GROUPS; e++) {
		const struct vr_deventry *x = &s->e[e];
		if (x->used != 1 || e == b->entry)
			continue;
		uint64_t g = x->guarantee, unused = g > held[e] ? g - held[e] : 0;
		sum = vr__sat_add(sum, unused);
		if (top && unused > most) {
			most = unused;
			memcpy(top->group, x->group, sizeof(top->group));
			top->group[sizeof(top->group) - 1] = '\0';
			top->uid = x->uid;
			top->pid = x->pid;
			top->guarantee = g;
			top->held = held[e];
		}
	}
	return sum;
}

void vr_devbook_pending(struct vr_devbook *b, int64_t delta)
{
	if (b->line < 0)
		return;
	struct vr_devline *l = &b->s->l[b->line];
	if (delta > 0) {
		atomic_store_explicit(&l->pending_ns, vr_now_ns(), memory_order_relaxed);
		atomic_fetch_add_explicit(&l->pending, (uint64_t)delta, memory_order_relaxed);
		return;
	}
	uint64_t less = (uint64_t)-delta,
	         cur = atomic_load_explicit(&l->pending, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&l->pending, &cur,
	                                              cur > less ? cur - less : 0,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

uint64_t vr_devbook_pending_others(struct vr_devbook *b)
{
	struct vr_devseg *s = b->s;
	uint64_t now = vr_now_ns(), sum = 0;
	uint32_t hw = lines_hw(s);
	for (uint32_t i = 0; i < hw; i++) {
		const struct vr_devline *l = &s->l[i];
		if (l->used != 1 || (int32_t)i == b->line)
			continue;
		uint64_t t = atomic_load_explicit(&l->pending_ns, memory_order_relaxed);
		if (t <= now && now - t < VR_DEVBOOK_PENDING_NS)
			sum = vr__sat_add(sum,
			                  atomic_load_explicit(&l->pending, memory_order_relaxed));
	}
	return sum;
}

void vr_devbook_held(struct vr_devbook *b, int64_t delta)
{
	if (b->line >= 0 && b->entry >= 0)
		atomic_fetch_add_explicit(&b->s->l[b->line].held, (uint64_t)delta,
		                          memory_order_relaxed);
}

/* Unmaps and detaches; closes fd only while it is still the door. */
static void release(struct vr_devbook *b)
{
	struct stat st;
	if (b->keep)
		munmap(b->keep, VR_DEVDOOR_SIZE);
	shmdt(b->s);
	if (fstat(b->fd, &st) == 0 && st.st_dev == b->dev && st.st_ino == b->ino)
		close(b->fd);
	free(b);
}

void vr_devbook_close(struct vr_devbook *b)
{
	if (!b)
		return;
	/* Without the lock (held too long, damage) the line is only left:
	 * closing the door drops its byte, and the next reclaim frees it. */
	if (b->line >= 0 && vr_devbook_lock(b) == 0) {
		drop_line(b);
		reclaim(b);
		vr_devbook_unlock(b);
	}
	pthread_mutex_destroy(&b->mu);
	release(b);
}

void vr_devbook_forget(struct vr_devbook *b)
{
	if (b)
		release(b);
}
