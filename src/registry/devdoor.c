/*
 * devdoor.c - a device book's name, the one check of its directory and
 * file, mapping it read-only, a stable copy of its entries, and whether an
 * entry's processes live (layout in devdoor.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/text.h"
#include "registry/devdoor.h"
#include "registry/proc.h"

_Static_assert(sizeof(struct vr_devhdr) <= VR_DEVBOOK_HDR_SIZE, "the header fits its page");
_Static_assert(sizeof(struct vr_deventry) == 320, "an entry is 320 bytes");
_Static_assert(sizeof(struct vr_devfile) == VR_DEVBOOK_SIZE, "the book's size");

void vr__devbook_name(const unsigned char uuid[16], char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(VR_DEVBOOK_PREFIX);
	memcpy(buf, VR_DEVBOOK_PREFIX, n);
	for (int i = 0; i < 16; i++) {
		buf[n + 2 * i] = hex[uuid[i] >> 4];
		buf[n + 2 * i + 1] = hex[uuid[i] & 15];
	}
	buf[n + 32] = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int vr__devbook_uuid(const char *name, unsigned char uuid[16])
{
	size_t n = strlen(VR_DEVBOOK_PREFIX);
	if (strncmp(name, VR_DEVBOOK_PREFIX, n) != 0 || strlen(name) != n + 32)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		int hi = hexval(name[n + 2 * i]), lo = hexval(name[n + 2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		uuid[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* Root's, and nobody else may write it. */
static int trusted(const struct stat *st, const char **why)
{
	if (st->st_uid != 0) {
		*why = "not owned by root";
		return -EPERM;
	}
	if (st->st_mode & 022) {
		*why = "writable by users other than root";
		return -EPERM;
	}
	return 0;
}

int vr__devdir_check(int dfd, const char **why)
{
	struct stat st;
	if (fstat(dfd, &st) != 0) {
		*why = "cannot stat";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		*why = "not a directory";
		return -ENOTDIR;
	}
	return trusted(&st, why);
}

/* The header's identity. */
static int hdr_check(const struct vr_devhdr *h, const unsigned char uuid[16], const char **why)
{
	if (atomic_load_explicit((const _Atomic uint64_t *)&h->magic, memory_order_acquire) !=
	    VR_DEVBOOK_MAGIC) {
		*why = "not a vramctl device book of this version (magic)";
		return -EBADMSG;
	}
	if (h->version != VR_DEVBOOK_VERSION || h->hdr_size != VR_DEVBOOK_HDR_SIZE ||
	    h->total_size != VR_DEVBOOK_SIZE || h->groups != VR_DEVBOOK_GROUPS ||
	    h->holders != VR_DEVBOOK_HOLDERS) {
		*why = "written by another vramctl version (its sizes differ)";
		return -EBADMSG;
	}
	if (memcmp(h->uuid, uuid, 16) != 0) {
		*why = "it names another device";
		return -EBADMSG;
	}
	if (h->capacity == 0) {
		*why = "the device's capacity is 0";
		return -EBADMSG;
	}
	return 0;
}

int vr__devbook_map(int dfd, const char *dir, const unsigned char uuid[16], int *fdp,
                    const struct vr_devfile **map, char *err, size_t errlen)
{
	char name[VR_DEVBOOK_NAME_MAX];
	vr__devbook_name(uuid, name);
	*fdp = -1;
	*map = NULL;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			vr_seterr(err, errlen, "device book %s/%s: %s", dir, name,
			          e == ELOOP ? "a symlink" : strerror(e));
		return e == ELOOP ? -EPERM : -e;
	}
	struct stat st = {0};
	const char *why = NULL;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (rc == 0 && !S_ISREG(st.st_mode)) {
		why = "not a regular file";
		rc = -EPERM;
	}
	if (rc == 0)
		rc = trusted(&st, &why);
	if (rc == 0 && st.st_size != (off_t)VR_DEVBOOK_SIZE) {
		why = "not the size of a device book of this version";
		rc = -EBADMSG;
	}
	void *p = MAP_FAILED;
	if (rc == 0 &&
	    (p = mmap(NULL, VR_DEVBOOK_SIZE, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		rc = -errno;
	if (rc == 0 && (rc = hdr_check(p, uuid, &why)) != 0)
		munmap(p, VR_DEVBOOK_SIZE);
	if (rc != 0) {
		vr_seterr(err, errlen, "device book %s/%s (uid %u, mode %04o): %s", dir, name,
		          (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
		          why ? why : strerror(-rc));
		close(fd);
		return rc;
	}
	*fdp = fd;
	*map = p;
	return 0;
}

/* Copies tried before a reader gives up: a writer (root) changes entries
 * with no system call inside, so only one stopped in the middle keeps
 * every copy from being stable. */
#define SNAP_TRIES 2000

int vr__devbook_snap(const struct vr_devfile *f, struct vr_devsnap *s)
{
	for (int t = 0; t < SNAP_TRIES; t++) {
		uint64_t s1 = atomic_load_explicit(&f->h.seq, memory_order_acquire);
		if (s1 & 1) {
			if (t > 64)
				sched_yield();
			continue;
		}
		uint64_t mask = atomic_load_explicit(&f->h.used_mask, memory_order_relaxed);
		s->capacity = f->h.capacity;
		s->n = 0;
		for (int i = 0; i < VR_DEVBOOK_GROUPS; i++)
			if (mask >> i & 1) {
				s->idx[s->n] = i;
				memcpy(&s->e[s->n++], &f->e[i], sizeof(s->e[0]));
			}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&f->h.seq, memory_order_relaxed) != s1)
			continue;
		if (f->h.magic != VR_DEVBOOK_MAGIC || s->capacity == 0)
			return -EBADMSG;
		for (int k = 0; k < s->n; k++) {
			const struct vr_deventry *e = &s->e[k];
			if (e->used != 1 || e->guarantee == 0 || e->guarantee > s->capacity ||
			    !memchr(e->group, '\0', sizeof e->group))
				return -EBADMSG;
		}
		return 0;
	}
	return -EAGAIN;
}

/* This process sees host PIDs (the initial PID namespace): 1, 0, or -1
 * before it was asked. */
static int host_pids = -1;

int vr_devbook_host_pids(void)
{
	int hp = __atomic_load_n(&host_pids, __ATOMIC_RELAXED);
	if (hp < 0) {
		struct stat ns;
		hp = stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino == VR_PID_INIT_INO;
		__atomic_store_n(&host_pids, hp, __ATOMIC_RELAXED);
	}
	return hp;
}

int vr__devholder_alive(const struct vr_devholder *h, int exact)
{
	if (h->pid <= 0)
		return 0;
	if (!vr_devbook_host_pids())
		return 1;
	if (kill(h->pid, 0) != 0 && errno == ESRCH)
		return 0;
	uint64_t start;
	if (exact && vr_proc_start_time(NULL, h->pid, &start) == 0 && start != h->start)
		return 0;
	return 1;
}

int vr__deventry_alive(const struct vr_deventry *e, int exact)
{
	if (vr__devholder_alive(&e->manager, exact))
		return 1;
	for (int i = 0; i < VR_DEVBOOK_HOLDERS; i++)
		if (vr__devholder_alive(&e->holder[i], exact))
			return 1;
	return 0;
}
