/*
 * region.c - the registry directory, the doors and the segments (region.h):
 * where they live, the one check every opener makes, creating and
 * publishing them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/fsize.h"
#include "common/siteconf.h"
#include "common/text.h"
#include "registry/member.h"
#include "registry/util.h"

_Static_assert(VR_GROUP_MAX == VR_GROUP_NAME_MAX, "the region holds any valid group name");

/* Opens (creating if missing) the registry directory and checks that it is
 * ours and private. Returns a directory fd or a negative errno. */
int vr_open_registry_dir(const char *dir, int create, char *err, size_t errlen)
{
	int created = 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && create) {
		created = mkdir(dir, 0700) == 0;
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (dfd < 0) {
		int e = errno;
		struct stat lst;
		if ((e == ELOOP || e == ENOTDIR) && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)) {
			vr_seterr(err, errlen, "registry directory %s is a symlink: refusing", dir);
			return -ELOOP;
		}
		if (e == ENOTDIR)
			vr_seterr(err, errlen, "registry directory %s is not a directory", dir);
		else
			vr_seterr(err, errlen, "cannot open registry directory %s: %s", dir,
			          strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(dfd, &st) < 0) {
		int e = errno;
		close(dfd);
		vr_seterr(err, errlen, "cannot stat registry directory %s: %s", dir, strerror(e));
		return -e;
	}
	/* mkdir's mode went through the host's umask; set it exactly instead of
	 * touching the umask. */
	if (created && (st.st_mode & 07777) != 0700 && st.st_uid == geteuid()) {
		if (fchmod(dfd, 0700) == 0)
			st.st_mode = (st.st_mode & ~07777u) | 0700;
	}
	if (st.st_uid != geteuid()) {
		close(dfd);
		vr_seterr(err, errlen,
		          "registry directory %s is owned by uid %u, not by uid %u: refusing", dir,
		          (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 077) {
		close(dfd);
		vr_seterr(
		    err, errlen,
		    "registry directory %s is readable or writable by other users (mode %04o, "
		    "not 0700): refusing",
		    dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return dfd;
}

int vr_check_dir(const char *dir, unsigned *mode, char *err, size_t errlen)
{
	int dfd = vr_open_registry_dir(dir, 0, err, errlen);
	if (dfd < 0)
		return dfd;
	struct stat st;
	if (mode && fstat(dfd, &st) == 0)
		*mode = (unsigned)(st.st_mode & 07777);
	close(dfd);
	return 0;
}

/* The header's own consistency (a door's or a segment's), for a door file of
 * file_size bytes (a segment: its header's size). */
static int header_check(const struct vr_region_hdr *h, uint64_t file_size, const char **why)
{
	if (file_size < sizeof(*h)) {
		*why = "truncated (shorter than a region header)";
		return -EBADMSG;
	}
	if (h->magic != VR_REGION_MAGIC) {
		*why = "not a vramctl region (bad magic)";
		return -EBADMSG;
	}
	if (h->version != VR_REGION_VERSION) {
		*why = "written by another vramctl version (region version differs)";
		return -EPROTONOSUPPORT;
	}
	if (h->hdr_size != VR_REGION_HDR_SIZE || h->slot_size != sizeof(struct vr_slot) ||
	    h->slot_count != VR_REGION_SLOTS || h->total_size != VR_REGION_SIZE) {
		*why = "corrupt (sizes in the header do not match this version)";
		return -EBADMSG;
	}
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > h->slot_count) {
		*why = "corrupt (counts out of range)";
		return -EBADMSG;
	}
	return 0;
}

int vr_region_validate(int fd, const char *group, enum vr_region_use use, struct stat *st,
                       struct vr_region_hdr *hdr, const char **why)
{
	memset(st, 0, sizeof(*st));
	if (fstat(fd, st) < 0) {
		*why = "cannot stat";
		return -errno;
	}
	if (!S_ISREG(st->st_mode)) {
		*why = "not a regular file";
		return -EINVAL;
	}
	if (st->st_uid != geteuid() && !(use == VR_REGION_READ && geteuid() == 0)) {
		*why = "owned by another user";
		return -EPERM;
	}
	if (st->st_mode & 077) {
		*why = "readable or writable by others (mode is not 0600)";
		return -EPERM;
	}
	ssize_t got = pread(fd, hdr, sizeof(*hdr), 0);
	if (got < 0) {
		*why = "cannot read";
		return -errno;
	}
	uint64_t size = (uint64_t)st->st_size;
	if ((size_t)got < sizeof(*hdr))
		size = (uint64_t)got;
	int rc = header_check(hdr, size, why);
	if (rc == 0 && (memchr(hdr->group, '\0', sizeof(hdr->group)) == NULL ||
	                strcmp(hdr->group, group) != 0)) {
		*why = "corrupt (it names another group)";
		rc = -EBADMSG;
	}
	return rc;
}

/*
 * rw, a door of another region version (ours, 0600, opened for writing),
 * that no process holds a lock on: the leftover of a group whose members
 * are all gone (members of every version lock bytes of the door for their
 * life; the probe covers the whole file), e.g. a named group's door after
 * an upgrade. It is removed under its maker's lock (byte 0, which joiners
 * take before they write a door; joiners finding the same leftover at once
 * wait for it in turn), checked again to be the file at the path. Closes
 * rw. Returns 0 when it is gone or replaced (the caller looks again),
 * -EPROTONOSUPPORT when a process holds it.
 */
static int retire_other_version(int dfd, const char *name, int rw, const struct stat *st)
{
	int rc = -EPROTONOSUPPORT;
	struct stat now;
	struct flock rest = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1, .l_len = 0};
	if (vr_door_lock(rw, 1) == 0) {
		if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
		    now.st_dev != st->st_dev || now.st_ino != st->st_ino)
			rc = 0; /* removed or replaced while we waited */
		else if (fcntl(rw, F_OFD_GETLK, &rest) == 0 && rest.l_type == F_UNLCK &&
		         unlinkat(dfd, name, 0) == 0)
			rc = 0;
	}
	close(rw); /* drops the maker's lock */
	return rc;
}

/*
 * Opens an existing region for writing, never following a symlink and never
 * opening another user's file for writing: it is first opened read-only,
 * checked, then reopened read-write and checked to be the same file.
 * Returns an fd, -ENOENT if there is none (or it was replaced between the
 * two opens, or it was another version's leftover, now removed: the caller
 * looks again), or another negative errno.
 */
int vr_region_open(int dfd, const char *dir, const char *group, const char *name, char *err,
                   size_t errlen)
{
	int ro = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (ro < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP)
			vr_seterr(err, errlen, "region %s/%s is a symlink: refusing", dir, name);
		else
			vr_seterr(err, errlen, "cannot open region %s/%s: %s", dir, name,
			          strerror(e));
		return -e;
	}
	struct stat st;
	struct vr_region_hdr hdr;
	const char *why = NULL;
	int rc = vr_region_validate(ro, group, VR_REGION_WRITE, &st, &hdr, &why);
	if (rc != 0 && rc != -EPROTONOSUPPORT) {
		close(ro);
		if (rc == -EPERM && st.st_uid != geteuid())
			vr_seterr(err, errlen,
			          "region %s/%s is owned by uid %u, not uid %u: refusing", dir,
			          name, (unsigned)st.st_uid, (unsigned)geteuid());
		else
			vr_seterr(err, errlen, "region %s/%s: %s; remove it to start afresh", dir,
			          name, why);
		return rc;
	}
	int rw = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st2;
	int got = rw >= 0 && fstat(rw, &st2) == 0;
	int same = got && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino;
	if (!same || st2.st_size < st.st_size) {
		int e = rw < 0 ? errno : EAGAIN;
		if (rw >= 0)
			close(rw);
		close(ro);
		if (e == ENOENT || (got && !same))
			return -ENOENT; /* removed or replaced meanwhile: look again */
		vr_seterr(err, errlen, "region %s/%s changed while being opened", dir, name);
		return -e;
	}
	close(ro);
	if (rc == 0)
		return rw;
	/* Another version's door: a leftover is replaced, one in use refused. */
	if (retire_other_version(dfd, name, rw, &st) == 0)
		return -ENOENT;
	vr_seterr(err, errlen,
	          "region %s/%s: %s, and a process of that version is in it: the members of a "
	          "group must run one vramctl version (the region is replaced once none is left)",
	          dir, name, why);
	return rc;
}

static void init_header(struct vr_region_hdr *h, const struct vr_join_opts *o)
{
	h->version = VR_REGION_VERSION;
	h->hdr_size = VR_REGION_HDR_SIZE;
	h->total_size = VR_REGION_SIZE;
	h->slot_count = VR_REGION_SLOTS;
	h->slot_size = sizeof(struct vr_slot);
	h->owner_uid = (uint32_t)geteuid();
	h->created = (uint64_t)time(NULL);
	h->growth = o->growth ? 1 : 0;
	h->spill_budget = o->spill_budget;
	vr_strlcpy(h->group, o->group, sizeof(h->group));
	vr_strlcpy(h->limit_spec, o->limit_spec ? o->limit_spec : "", sizeof(h->limit_spec));
}

/*
 * Creates the door under a temporary name and links it into place only
 * when complete (its segment comes later, vr_segment_create). Returns an
 * fd, -EEXIST if another process published the door first, or another
 * negative errno.
 */
int vr_region_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                     char *err, size_t errlen)
{
	static _Atomic unsigned counter;
	char tmp[128];
	/* Writing past the file size limit would raise SIGXFSZ in the program. */
	if (vr_fsize_below(VR_DOOR_SIZE)) {
		vr_seterr(err, errlen,
		          "cannot create region %s/%s: the file size limit (ulimit -f) is below "
		          "its %u bytes",
		          dir, name, VR_DOOR_SIZE);
		return -EFBIG;
	}
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%u.tmp", o->group, (long)getpid(),
	         atomic_fetch_add(&counter, 1));
	int fd =
	    openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot create region in %s: %s", dir, strerror(e));
		return -e;
	}
	static struct vr_region_hdr zero;
	struct vr_region_hdr door = zero;
	init_header(&door, o);
	door.shm_id = -1;
	door.magic = VR_REGION_MAGIC;
	int rc = 0;
	if (fchmod(fd, 0600) < 0)
		rc = -errno;
	else if (pwrite(fd, &door, sizeof(door), 0) != (ssize_t)sizeof(door))
		rc = errno ? -errno : -EIO;
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot create region %s/%s: %s", dir, name, strerror(-rc));
		unlinkat(dfd, tmp, 0);
		close(fd);
		return rc;
	}
	if (linkat(dfd, tmp, dfd, name, 0) < 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
		close(fd);
		if (rc != -EEXIST)
			vr_seterr(err, errlen, "cannot publish region %s/%s: %s", dir, name,
			          strerror(-rc));
		return rc;
	}
	unlinkat(dfd, tmp, 0);
	return fd;
}

/* ---- the segment */

struct vr_region_hdr *vr_segment_attach(const struct vr_region_hdr *door, int rdonly)
{
	int id = door->shm_id;
	struct shmid_ds ds;
	if (id < 0 || shmctl(id, IPC_STAT, &ds) < 0)
		return NULL;
	if ((ds.shm_perm.uid != geteuid() && !(rdonly && geteuid() == 0)) ||
	    (ds.shm_perm.mode & 077) || ds.shm_segsz != VR_REGION_SIZE)
		return NULL;
	void *p = shmat(id, NULL, rdonly ? SHM_RDONLY : 0);
	if (p == (void *)-1)
		return NULL;
	struct vr_region_hdr *h = p;
	const char *why;
	if (header_check(h, VR_REGION_HDR_SIZE, &why) != 0 || h->shm_key != door->shm_key ||
	    memcmp(h->group, door->group, sizeof(h->group)) != 0) {
		shmdt(p);
		return NULL;
	}
	return h;
}

/* Maps [off, off + len) of the segment in one call (rounded out to pages). */
static void populate(const struct vr_region_hdr *h, uint64_t off, uint64_t len, int write)
{
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
	long sz = sysconf(_SC_PAGESIZE);
	if (sz <= 0)
		return;
	uint64_t page = (uint64_t)sz, end = (off + len + page - 1) & ~(page - 1);
	off &= ~(page - 1);
	(void)madvise((unsigned char *)h + off, end - off,
	              write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
	(void)h;
	(void)off;
	(void)len;
	(void)write;
#endif
}

void vr_segment_prefault(const struct vr_region_hdr *h, uint32_t slots, int write)
{
	/* Only the slots ever used, and their numbers on the group's devices:
	 * the rest are never read. Best effort (Linux 5.14+; elsewhere the
	 * pages fault in one by one as before). */
	uint32_t hw = vr_hdr_hw(h), ndev = vr_hdr_ndev(h);
	if (slots > VR_REGION_SLOTS)
		slots = VR_REGION_SLOTS;
	if (slots > hw)
		hw = slots;
	populate(h, 0, VR_SLOTS_OFFSET + (uint64_t)hw * sizeof(struct vr_slot), write);
	for (uint32_t d = 0; d < ndev; d++)
		populate(h,
		         VR_COUNTS_OFFSET +
		             (uint64_t)d * VR_REGION_SLOTS * sizeof(struct vr_counts_line),
		         (uint64_t)hw * sizeof(struct vr_counts_line), write);
}

void vr_segment_detach(struct vr_region_hdr *h)
{
	if (h)
		shmdt(h);
}

int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_region_hdr **out)
{
	int id = shmget(IPC_PRIVATE, VR_REGION_SIZE, IPC_CREAT | IPC_EXCL | 0600);
	if (id < 0)
		return -errno;
	void *p = shmat(id, NULL, 0);
	/* Marked for removal at once: it lives while attached, and goes with
	 * its last member (Linux lets members attach it by id meanwhile). */
	int e = p == (void *)-1 ? errno : 0;
	shmctl(id, IPC_RMID, NULL);
	if (e)
		return -e;
	struct vr_region_hdr *h = p;
	init_header(h, o);
	uint64_t key = 0;
	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
		key = vr_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
	h->shm_key = key;
	h->shm_id = id;
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, VR_REGION_MAGIC, memory_order_release);
	/* The door names it: key and id are next to each other, one write. */
	unsigned char
	    ids[offsetof(struct vr_region_hdr, pad1a) - offsetof(struct vr_region_hdr, shm_key)];
	memcpy(ids, (unsigned char *)h + offsetof(struct vr_region_hdr, shm_key), sizeof(ids));
	if (pwrite(fd, ids, sizeof(ids), offsetof(struct vr_region_hdr, shm_key)) !=
	    (ssize_t)sizeof(ids)) {
		e = errno ? errno : EIO;
		shmdt(p);
		return -e;
	}
	*out = h;
	return 0;
}

int vr_door_lock(int fd, int lock)
{
	struct flock fl = {.l_type = lock ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET, .l_len = 1};
	uint64_t t0 = vr_now_ns();
	while (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		if (!lock || (errno != EAGAIN && errno != EACCES))
			return -errno;
		if (vr_now_ns() - t0 > vr_lock_bound_ns)
			return -ETIMEDOUT;
		struct timespec ts = {.tv_nsec = 200000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

int vr_group_remove(const char *dir, const char *group)
{
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_MAX + 8];
	if (vr_group_name_check(group, NULL, 0) < 0)
		return -EINVAL;
	int rc = vr_dir_or_default(&dir, dirbuf, sizeof(dirbuf));
	if (rc < 0)
		return rc;
	int dfd = vr_open_registry_dir(dir, 0, NULL, 0);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%s.vrg", group);
	rc = unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

/* 1 if path exists and is not a directory of ours (another user's squat). */
static int taken_by_another(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	return !S_ISDIR(st.st_mode) || st.st_uid != geteuid();
}

/* $HOME/.vramctl-run-<host>: where the books go when /tmp/vramctl-<uid> is
 * another user's. 0 when there is no usable home. */
static int home_dir(char *buf, size_t len)
{
	const char *home = getenv("HOME");
	char host[64];
	struct stat st;
	if (!home || home[0] != '/' || stat(home, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || gethostname(host, sizeof(host)) != 0)
		return 0;
	host[sizeof(host) - 1] = '\0';
	int n = snprintf(buf, len, "%s/.vramctl-run-%s", home, host);
	return n > 0 && (size_t)n < len;
}

int vr_default_dir(char *buf, size_t len)
{
	const char *e = getenv("VRAMCTL_REGISTRY_DIR");
	int n;
	if (!buf || len == 0)
		return -EINVAL;
	if (e && *e) {
		n = snprintf(buf, len, "%s", e);
	} else if ((e = VR_SITE_TEXT_OF(vr_site_get(), registry_dir))) {
		/* The admin's choice (vramctl.conf(5)), checked when it was read. */
		return vr_dir_pattern(e, geteuid(), buf, len);
	} else if ((e = getenv("XDG_RUNTIME_DIR")) && e[0] == '/') {
		n = snprintf(buf, len, "%s/vramctl", e);
	} else {
		/* /tmp/vramctl-<uid>, unless another user took that name first:
		 * then, and from then on (so that the user's processes never
		 * split between two places), a directory in the home. */
		char home[PATH_MAX];
		struct stat st;
		if (home_dir(home, sizeof(home)) && lstat(home, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid())
			n = snprintf(buf, len, "%s", home);
		else if (((n = snprintf(buf, len, VR_DEFAULT_DIR_PREFIX "%u",
		                        (unsigned)geteuid())) < 0 ||
		          (size_t)n >= len || taken_by_another(buf)) &&
		         home_dir(home, sizeof(home)))
			n = snprintf(buf, len, "%s", home);
	}
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

int vr_prepare_user_dir(const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	if (!slash || slash == dir + strlen(dir) - 1 || (size_t)(slash - dir) >= sizeof(parent)) {
		vr_seterr(err, errlen, "%s: not an absolute path to a directory", dir);
		return -EINVAL;
	}
	memcpy(parent, dir, (size_t)(slash - dir));
	parent[slash - dir] = '\0';
	const char *base = slash + 1;
	int pfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot open %s: %s", parent, strerror(e));
		return -e;
	}
	int rc = 0, fd = -1;
	for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
		struct stat st;
		if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!S_ISDIR(st.st_mode) || st.st_uid != uid)) {
			/* Someone else's (a squat): moved aside, kept for a look. */
			char aside[NAME_MAX + 1];
			snprintf(aside, sizeof(aside), ".%.200s.taken-by-uid-%u.%ld", base,
			         (unsigned)st.st_uid, (long)time(NULL));
			if (renameat(pfd, base, pfd, aside) != 0 && errno != ENOENT) {
				rc = -errno;
				break;
			}
		}
		if (mkdirat(pfd, base, 0700) != 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 &&
		    (fstat(fd, &st) != 0 || (st.st_uid != uid && st.st_uid != geteuid()))) {
			close(fd); /* replaced meanwhile: look again */
			fd = -1;
		}
	}
	if (fd >= 0 && (fchown(fd, uid, gid) != 0 || fchmod(fd, 0700) != 0))
		rc = -errno;
	else if (fd < 0 && rc == 0)
		rc = -EAGAIN;
	if (rc < 0)
		vr_seterr(err, errlen, "cannot prepare %s for uid %u: %s", dir, (unsigned)uid,
		          strerror(-rc));
	if (fd >= 0)
		close(fd);
	close(pfd);
	return rc;
}

int vr_dir_or_default(const char **dir, char *buf, size_t len)
{
	if (*dir && **dir)
		return 0;
	int rc = vr_default_dir(buf, len);
	if (rc < 0)
		return rc;
	*dir = buf;
	return 0;
}
