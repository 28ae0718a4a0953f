/*
 * dir.c - the registry directory: where the doors live (the default for
 * each user, a launcher's directory for another user) and the one check
 * every opener makes of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/siteconf.h"
#include "common/text.h"
#include "registry/dir.h"
#include "registry/registry.h"
#include "registry/util.h"

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
	/* Root made it for the user whose books these are (vr_owner). */
	if (created && st.st_uid != vr_owner() && fchown(dfd, vr_owner(), (gid_t)-1) == 0)
		st.st_uid = vr_owner();
	if (st.st_uid != vr_owner()) {
		close(dfd);
		vr_seterr(err, errlen,
		          "registry directory %s is owned by uid %u, not by uid %u: refusing", dir,
		          (unsigned)st.st_uid, (unsigned)vr_owner());
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
	const char *home = secure_getenv("HOME");
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
	const char *e = secure_getenv("VRAMCTL_REGISTRY_DIR");
	int n;
	if (!buf || len == 0)
		return -EINVAL;
	if (e && *e) {
		n = snprintf(buf, len, "%s", e);
	} else if ((e = VR_SITE_TEXT_OF(vr_site_get(), registry_dir))) {
		/* The admin's choice (vramctl.conf(5)), checked when it was read. */
		return vr_dir_pattern(e, geteuid(), buf, len);
	} else if ((e = secure_getenv("XDG_RUNTIME_DIR")) && e[0] == '/') {
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

int vr_user_dir(uid_t uid, char *buf, size_t len)
{
	const char *pat = VR_SITE_TEXT_OF(vr_site_get(), registry_dir);
	char run[64];
	struct stat st;
	int n;
	if (pat)
		return vr_dir_pattern(pat, uid, buf, len);
	snprintf(run, sizeof run, "/run/user/%u", (unsigned)uid);
	if (stat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		n = snprintf(buf, len, "%s/vramctl", run);
	else
		n = snprintf(buf, len, VR_DEFAULT_DIR_PREFIX "%u", (unsigned)uid);
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
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
