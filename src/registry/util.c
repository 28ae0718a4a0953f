/*
 * util.c - libc-only helpers for the registry (see util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsize.h"
#include "registry/util.h"

ssize_t vr_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Set only for the length of a join by root for another user (join.c). */
static __thread int owner_on;
static __thread uid_t owner_uid;

uid_t vr_owner(void)
{
	return owner_on ? owner_uid : geteuid();
}

void vr_owner_set(int on, uid_t uid)
{
	owner_on = on;
	owner_uid = uid;
}

char *vr_read_all(const char *path, size_t *len)
{
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (got + 4096 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + got, cap - got - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[got] = '\0';
		*len = got;
	}
	return buf;
}

uint64_t vr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int vr_ofd_lock(int fd, long long byte, int lock, uint64_t end)
{
	struct flock fl = {
	    .l_type = lock ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
	while (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		if (!lock || (errno != EAGAIN && errno != EACCES))
			return -errno;
		if (vr_now_ns() > end)
			return -ETIMEDOUT;
		struct timespec ts = {.tv_nsec = 200000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

int vr_tmp_write(const struct vr_tmp_file *f, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	static _Atomic unsigned counter;
	/* Writing past the file size limit would raise SIGXFSZ in the program. */
	if (vr_fsize_below(f->len)) {
		vr_seterr(
		    err, errlen,
		    "cannot create %s %s/%s: the file size limit (ulimit -f) is below its %zu "
		    "bytes",
		    f->what, f->dir, f->name, f->len);
		return -EFBIG;
	}
	snprintf(tmp, tmplen, ".%s.%ld.%u.tmp", f->stem, (long)getpid(),
	         atomic_fetch_add(&counter, 1));
	int fd = openat(f->dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
	                f->mode);
	if (fd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "cannot create %s in %s: %s", f->what, f->dir, strerror(e));
		return -e;
	}
	int rc = 0;
	if (fchmod(fd, f->mode) < 0) /* the umask narrowed it: our own file only */
		rc = -errno;
	else if (pwrite(fd, f->buf, f->len, 0) != (ssize_t)f->len)
		rc = errno ? -errno : -EIO;
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot create %s %s/%s: %s", f->what, f->dir, f->name,
		          strerror(-rc));
		unlinkat(f->dfd, tmp, 0);
		close(fd);
		return rc;
	}
	return fd;
}

int vr_door_open_ro(int dfd, const char *dir, const char *name, const char *what, char *err,
                    size_t errlen)
{
	int ro = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (ro >= 0)
		return ro;
	int e = errno;
	if (e == ELOOP)
		vr_seterr(err, errlen, "%s %s/%s is a symlink: refusing", what, dir, name);
	else if (e != ENOENT)
		vr_seterr(err, errlen, "cannot open %s %s/%s: %s", what, dir, name, strerror(e));
	return -e;
}
