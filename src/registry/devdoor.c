/*
 * devdoor.c - a device book's door and segment (layout in devdoor.h): the
 * door's one check, attaching and checking the segment, who is alive, and
 * for the writer opening or creating the door and finding or making its
 * segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/random.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsize.h"
#include "registry/devdoor.h"
#include "registry/util.h"

_Static_assert(sizeof(struct vr_devhdr) <= VR_DEVSEG_HDR_SIZE, "device book header");
_Static_assert(sizeof(struct vr_devhdr) <= VR_DEVDOOR_SIZE, "device door");
_Static_assert(sizeof(struct vr_deventry) == 128, "device book entry");
_Static_assert(sizeof(struct vr_devline) == 64, "device book line");
_Static_assert(sizeof(struct vr_devseg) == VR_DEVSEG_SIZE, "device book segment");

void vr__devdoor_name(const unsigned char uuid[16], char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(VR_DEVDOOR_PREFIX);
	memcpy(buf, VR_DEVDOOR_PREFIX, n);
	for (int i = 0; i < 16; i++) {
		buf[n++] = hex[uuid[i] >> 4];
		buf[n++] = hex[uuid[i] & 15];
	}
	buf[n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int vr__devdoor_uuid(const char *name, unsigned char uuid[16])
{
	size_t n = strlen(VR_DEVDOOR_PREFIX);
	if (strncmp(name, VR_DEVDOOR_PREFIX, n) != 0 || strlen(name) != n + 32)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		int hi = hexval(name[n + 2 * i]), lo = hexval(name[n + 2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		uuid[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* The header's identity: a door's or a segment's. */
static int hdr_check(const struct vr_devhdr *h, const unsigned char uuid[16], const char **why)
{
	if (h->magic != VR_DEVBOOK_MAGIC) {
		*why = "not a vramctl device book (bad magic)";
		return -EBADMSG;
	}
	if (h->version != VR_DEVBOOK_VERSION) {
		*why = "written by another vramctl version (device book version differs)";
		return -EBADMSG;
	}
	if (h->hdr_size != sizeof(*h) || h->total_size != VR_DEVSEG_SIZE ||
	    h->groups != VR_DEVBOOK_GROUPS || h->lines != VR_DEVBOOK_LINES) {
		*why = "corrupt (sizes in the header do not match this version)";
		return -EBADMSG;
	}
	if (memcmp(h->uuid, uuid, 16) != 0) {
		*why = "corrupt (it names another device)";
		return -EBADMSG;
	}
	if (h->capacity == 0) {
		*why = "corrupt (the device's capacity is 0)";
		return -EBADMSG;
	}
	return 0;
}

int vr__devdoor_check(int fd, const unsigned char uuid[16], struct stat *st, struct vr_devhdr *h,
                      const char **why)
{
	memset(h, 0, sizeof(*h));
	if (fstat(fd, st) < 0) {
		*why = "cannot stat";
		return -errno;
	}
	if (!S_ISREG(st->st_mode)) {
		*why = "not a regular file";
		return -EBADMSG;
	}
	if (st->st_size != VR_DEVDOOR_SIZE) {
		*why = "corrupt (not the size of a device book's door)";
		return -EBADMSG;
	}
	if ((st->st_mode & 0666) != 0666) {
		*why = "not readable and writable by every user (mode is not 0666)";
		return -EPERM;
	}
	ssize_t got = pread(fd, h, sizeof(*h), 0);
	if (got < 0) {
		*why = "cannot read";
		return -errno;
	}
	if ((size_t)got < sizeof(*h)) {
		*why = "truncated";
		return -EBADMSG;
	}
	return hdr_check(h, uuid, why);
}

/* What vr__devseg_attach says when no segment has the door's id here. */
static const char seg_missing[] = "its segment is gone";

struct vr_devseg *vr__devseg_attach(const struct vr_devhdr *door, int rdonly, const char **why)
{
	struct shmid_ds ds;
	*why = seg_missing;
	if (door->shm_id < 0 || shmctl(door->shm_id, IPC_STAT, &ds) < 0)
		return NULL;
	if (ds.shm_segsz != VR_DEVSEG_SIZE || (ds.shm_perm.mode & 0666) != 0666) {
		*why = "the segment it names is not a device book's (size or mode)";
		return NULL;
	}
	void *p = shmat(door->shm_id, NULL, rdonly ? SHM_RDONLY : 0);
	if (p == (void *)-1) {
		*why = "cannot attach its segment";
		return NULL;
	}
	struct vr_devseg *s = p;
	int bad = hdr_check(&s->h, door->uuid, why) != 0;
	if (!bad && s->h.shm_key != door->shm_key) {
		*why = "the segment it names is another's (key differs)";
		bad = 1;
	} else if (!bad && s->h.capacity != door->capacity) {
		*why = "corrupt (the segment's capacity is not the door's)";
		bad = 1;
	}
	if (bad) {
		shmdt(p);
		return NULL;
	}
	return s;
}

int vr__devseg_check(const struct vr_devseg *s, const struct vr_devhdr *door, const char **why)
{
	int rc = hdr_check(&s->h, door->uuid, why);
	if (rc != 0)
		return rc;
	uint64_t cap = door->capacity;
	if (s->h.capacity != cap || s->h.shm_key != door->shm_key) {
		*why = "corrupt (the segment's identity changed)";
		return -EBADMSG;
	}
	uint32_t hw = s->h.lines_hw;
	if (hw > VR_DEVBOOK_LINES) {
		*why = "corrupt (line count out of range)";
		return -EBADMSG;
	}
	uint64_t sum = 0;
	unsigned char used[VR_DEVBOOK_GROUPS];
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++) {
		const struct vr_deventry *e = &s->e[i];
		uint32_t u = e->used;
		uint64_t g = e->guarantee;
		used[i] = u == 1;
		if (u > 1 || (u && (g == 0 || g > cap ||
		                    memchr(e->group, '\0', sizeof(e->group)) == NULL))) {
			*why = "corrupt (a group's entry is out of range)";
			return -EBADMSG;
		}
		if (u)
			sum = vr__sat_add(sum, g);
	}
	if (sum > cap) {
		*why = "corrupt (the guarantees given exceed the device)";
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < hw; i++) {
		const struct vr_devline *l = &s->l[i];
		uint32_t u = l->used;
		int32_t e = l->entry;
		uint64_t held = atomic_load_explicit(&l->held, memory_order_relaxed);
		if (u > 1 || (u && (e < -1 || e >= VR_DEVBOOK_GROUPS || (e >= 0 && !used[e]) ||
		                    held > cap))) {
			*why = "corrupt (a process's line is out of range)";
			return -EBADMSG;
		}
	}
	return 0;
}

static int probe(int fd, long long start, long long len)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return 1;
	return fl.l_type != F_UNLCK;
}

int vr__devline_alive(int fd, uint32_t i)
{
	return probe(fd, VR_DEVDOOR_LINE_BYTE(i), 1);
}

int vr__devlines_any_alive(int fd)
{
	return probe(fd, VR_DEVDOOR_LINE_BYTE(0), VR_DEVBOOK_LINES);
}

int vr__devdoor_lock(int fd, long long byte, int lock)
{
	return vr_ofd_lock(fd, byte, lock, vr_now_ns() + VR_DEVBOOK_LOCK_BOUND_NS);
}

/* Opens an existing door for writing, never following a symlink: read-only
 * first, checked, then read-write and checked to be the same file. An fd,
 * -ENOENT when there is none (or it changed between the opens: look
 * again), or another negative errno with err. */
static int door_open(int dfd, const char *dir, const char *name, const unsigned char uuid[16],
                     char *err, size_t errlen)
{
	int ro = vr_door_open_ro(dfd, dir, name, "device book", err, errlen);
	if (ro < 0)
		return ro;
	struct stat st = {0}, st2;
	struct vr_devhdr h;
	const char *why = "";
	int rc = vr__devdoor_check(ro, uuid, &st, &h, &why);
	if (rc != 0) {
		close(ro);
		vr_seterr(err, errlen,
		          "device book %s/%s (uid %u): %s; its owner or root may remove it", dir,
		          name, (unsigned)st.st_uid, why);
		return rc;
	}
	int rw = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	int e = rw < 0 ? errno : 0;
	close(ro);
	if (rw < 0) {
		if (e == ENOENT)
			return -ENOENT;
		vr_seterr(err, errlen, "cannot open device book %s/%s for writing: %s", dir, name,
		          strerror(e));
		return -e;
	}
	if (fstat(rw, &st2) != 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(rw);
		return -ENOENT; /* replaced meanwhile: look again */
	}
	return rw;
}

/* Creates the door under a temporary name, 0666 whatever the umask, and
 * links it into place complete. An fd, -EEXIST when another process
 * published one first, or another negative errno with err. */
static int door_create(int dfd, const char *dir, const char *name, const unsigned char uuid[16],
                       uint64_t capacity, char *err, size_t errlen)
{
	union {
		struct vr_devhdr h;
		unsigned char bytes[VR_DEVDOOR_SIZE];
	} door;
	memset(&door, 0, sizeof(door));
	door.h.magic = VR_DEVBOOK_MAGIC;
	door.h.version = VR_DEVBOOK_VERSION;
	door.h.hdr_size = sizeof(struct vr_devhdr);
	door.h.total_size = VR_DEVSEG_SIZE;
	door.h.groups = VR_DEVBOOK_GROUPS;
	door.h.lines = VR_DEVBOOK_LINES;
	memcpy(door.h.uuid, uuid, 16);
	door.h.capacity = capacity;
	door.h.shm_id = -1;
	door.h.creator_uid = (uint32_t)geteuid();
	door.h.created = (uint64_t)time(NULL);
	struct vr_tmp_file f = {.dfd = dfd,
	                        .dir = dir,
	                        .name = name,
	                        .what = "device book",
	                        .stem = name,
	                        .mode = 0666,
	                        .buf = door.bytes,
	                        .len = sizeof(door.bytes)};
	char tmp[VR_DEVDOOR_NAME_MAX + 48];
	int fd = vr_tmp_write(&f, tmp, sizeof(tmp), err, errlen);
	if (fd < 0)
		return fd;
	int rc = linkat(dfd, tmp, dfd, name, 0) < 0 ? -errno : 0;
	unlinkat(dfd, tmp, 0);
	if (rc < 0) {
		close(fd);
		if (rc != -EEXIST)
			vr_seterr(err, errlen, "cannot create device book %s/%s: %s", dir, name,
			          strerror(-rc));
		return rc;
	}
	return fd;
}

/* Makes a segment for the door fd (its lock held, nobody alive): header
 * written, magic last, then its id and key in the door. */
static struct vr_devseg *seg_make(int fd, struct vr_devhdr *door, int *e)
{
	int id = shmget(IPC_PRIVATE, VR_DEVSEG_SIZE, IPC_CREAT | IPC_EXCL | 0666);
	if (id < 0) {
		*e = errno;
		return NULL;
	}
	void *p = shmat(id, NULL, 0);
	*e = p == (void *)-1 ? errno : 0;
	/* Marked for removal at once: it goes with the last process attached
	 * (Linux still lets others attach it by id meanwhile). */
	shmctl(id, IPC_RMID, NULL);
	if (*e)
		return NULL;
	struct vr_devseg *s = p;
	uint64_t key = 0;
	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
		key = vr_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
	key |= 1; /* never 0: a fresh door's */
	s->h = *door;
	s->h.magic = 0;
	s->h.shm_key = key;
	s->h.shm_id = id;
	s->h.creator_uid = (uint32_t)geteuid();
	atomic_store_explicit(&s->h.guaranteed, 0, memory_order_relaxed);
	s->h.lines_hw = 0;
	for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
		s->e[i].used = 0;
	atomic_store_explicit((_Atomic uint64_t *)&s->h.magic, VR_DEVBOOK_MAGIC,
	                      memory_order_release);
	/* The door names it: key and id side by side, one write. */
	unsigned char
	    ids[offsetof(struct vr_devhdr, creator_uid) - offsetof(struct vr_devhdr, shm_key)];
	memcpy(ids, (unsigned char *)&s->h + offsetof(struct vr_devhdr, shm_key), sizeof(ids));
	if (pwrite(fd, ids, sizeof(ids), offsetof(struct vr_devhdr, shm_key)) !=
	    (ssize_t)sizeof(ids)) {
		*e = errno ? errno : EIO;
		shmdt(p);
		return NULL;
	}
	door->shm_key = key;
	door->shm_id = id;
	return s;
}

int vr__devdoor_attach(int dfd, const char *dir, const unsigned char uuid[16], uint64_t capacity,
                       int *fdp, struct vr_devhdr *door, struct vr_devseg **segp, char *err,
                       size_t errlen)
{
	char name[VR_DEVDOOR_NAME_MAX];
	vr__devdoor_name(uuid, name);
	int fd = -ENOENT;
	for (int tries = 0; tries < 8 && fd == -ENOENT; tries++) {
		fd = door_open(dfd, dir, name, uuid, err, errlen);
		if (fd == -ENOENT) {
			fd = door_create(dfd, dir, name, uuid, capacity, err, errlen);
			if (fd == -EEXIST)
				fd = -ENOENT; /* another made it first: open theirs */
		}
	}
	if (fd == -ENOENT)
		vr_seterr(err, errlen, "device book %s/%s keeps changing while being opened", dir,
		          name);
	if (fd < 0)
		return fd;
	int rc = vr__devdoor_lock(fd, VR_DEVDOOR_MAKER_BYTE, 1);
	if (rc < 0) {
		vr_seterr(err, errlen, "device book %s/%s: %s", dir, name,
		          rc == -ETIMEDOUT ? "its door's lock is held by a process that does not "
		                             "let go (stopped?)"
		                           : strerror(-rc));
		close(fd);
		return rc;
	}
	struct stat st;
	const char *why = "";
	struct vr_devseg *s = NULL;
	rc = vr__devdoor_check(fd, uuid, &st, door, &why);
	if (rc == 0 && (s = vr__devseg_attach(door, 0, &why)) == NULL) {
		int e = 0;
		if (vr__devlines_any_alive(fd)) {
			/* Replacing it would split the book in two. Live lines
			 * mean a segment exists where they are: not "gone". */
			rc = -EBADMSG;
			if (why == seg_missing)
				why = "processes hold lines in it, but the segment it names "
				      "cannot be reached from here (another IPC namespace's, "
				      "or the door was overwritten)";
		} else if ((s = seg_make(fd, door, &e)) == NULL) {
			rc = -e;
			why = strerror(e);
		}
	}
	vr__devdoor_lock(fd, VR_DEVDOOR_MAKER_BYTE, 0);
	if (rc != 0) {
		vr_seterr(err, errlen, "device book %s/%s: %s%s", dir, name, why,
		          rc == -EBADMSG && !strstr(why, "processes hold lines")
		              ? ", while processes use it (another IPC namespace's, or damaged)"
		              : "");
		close(fd);
		return rc;
	}
	*fdp = fd;
	*segp = s;
	return 0;
}
