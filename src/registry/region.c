/*
 * region.c - the registry directory and the region files: where they live,
 * the one check every opener makes, creating and publishing a new region.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry/member.h"
#include "registry/util.h"

/* Opens (creating if missing) the registry directory and checks that it is
 * ours and private. Returns a directory fd or a negative errno. */
int vr_open_registry_dir(const char *dir, int create, char *err, size_t errlen)
{
	int created = 0;
	if (create && mkdir(dir, 0700) == 0)
		created = 1;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
	if (st.st_mode & 022) {
		close(dfd);
		vr_seterr(err, errlen,
		          "registry directory %s is group or world writable (mode %04o): refusing",
		          dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return dfd;
}

int vr_group_name_ok(const char *g)
{
	size_t n = 0;
	if (!g || !*g || g[0] == '.')
		return 0;
	for (; g[n]; n++) {
		char c = g[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
		if (n >= VR_GROUP_MAX)
			return 0;
	}
	return 1;
}

/* The header's own consistency, for a file of file_size bytes. */
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
	if (file_size < h->total_size) {
		*why = "truncated";
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
 * Opens an existing region for writing, never following a symlink and never
 * opening another user's file for writing: it is first opened read-only,
 * checked, then reopened read-write and checked to be the same file.
 * Returns an fd, -ENOENT if there is none, or another negative errno.
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
	if (rc != 0) {
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
	if (rw < 0 || fstat(rw, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino ||
	    st2.st_size < st.st_size) {
		int e = rw < 0 ? errno : EAGAIN;
		if (rw >= 0)
			close(rw);
		close(ro);
		vr_seterr(err, errlen, "region %s/%s changed while being opened", dir, name);
		return -e;
	}
	close(ro);
	return rw;
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
	vr_strlcpy(h->group, o->group, sizeof(h->group));
	vr_strlcpy(h->limit_spec, o->limit_spec ? o->limit_spec : "", sizeof(h->limit_spec));
}

/*
 * Creates the region under a temporary name and links it into place only
 * when complete. Returns an fd, -EEXIST if another process published the
 * region first, or another negative errno.
 */
int vr_region_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                     char *err, size_t errlen)
{
	static _Atomic unsigned counter;
	char tmp[128];
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%u.tmp", o->group, (long)getpid(),
	         atomic_fetch_add(&counter, 1));
	int fd =
	    openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot create region in %s: %s", dir, strerror(e));
		return -e;
	}
	int rc = 0;
	void *map = MAP_FAILED;
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)VR_REGION_SIZE) < 0) {
		rc = -errno;
		goto fail;
	}
	map = mmap(NULL, VR_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	struct vr_region_hdr *h = map;
	init_header(h, o);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	int e = pthread_mutex_init(&h->lock.mutex, &a);
	pthread_mutexattr_destroy(&a);
	if (e != 0) {
		rc = -e;
		goto fail;
	}
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, VR_REGION_MAGIC, memory_order_release);
	munmap(map, VR_REGION_SIZE);
	map = MAP_FAILED;
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
fail:
	vr_seterr(err, errlen, "cannot create region %s/%s: %s", dir, name, strerror(-rc));
	if (map != MAP_FAILED)
		munmap(map, VR_REGION_SIZE);
	unlinkat(dfd, tmp, 0);
	close(fd);
	return rc;
}
int vr_group_remove(const char *dir, const char *group)
{
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_MAX + 8];
	if (!vr_group_name_ok(group))
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

int vr_default_dir(char *buf, size_t len)
{
	const char *e = getenv("VRAMCTL_REGISTRY_DIR");
	int n;
	if (!buf || len == 0)
		return -EINVAL;
	if (e && *e) {
		n = snprintf(buf, len, "%s", e);
	} else if ((e = getenv("XDG_RUNTIME_DIR")) && e[0] == '/') {
		n = snprintf(buf, len, "%s/vramctl", e);
	} else {
		n = snprintf(buf, len, "/tmp/vramctl-%u", (unsigned)geteuid());
	}
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
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
