/*
 * util.h - small libc-only helpers shared by the registry's writer and
 * reader. Internal: hidden, prefixed vr_.
 */
#ifndef VRAMCTL_REGISTRY_UTIL_H
#define VRAMCTL_REGISTRY_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "common/text.h" /* vr_seterr, for one-line error messages */

/* Reads up to len-1 bytes of a (small, /proc) file and terminates them.
 * Returns the bytes read or a negative errno. */
ssize_t vr_read_file(const char *path, char *buf, size_t len);

/*
 * The uid whose books this thread opens and makes: geteuid(), except while
 * root joins a group of another user's job (vr_join_opts.owner, set for the
 * call by vr_owner_set): then that user, so that root's process joins the
 * user's books instead of refusing them, and whatever it has to make
 * (directory, door, segment) is the user's, never root's (which the user's
 * own processes would refuse).
 */
uid_t vr_owner(void);
void vr_owner_set(int on, uid_t uid);

/* The whole of path (a /proc or cgroup file of any length), terminated,
 * in a buffer the caller frees; *len its length. NULL when it cannot be
 * opened or the memory is not there. */
char *vr_read_all(const char *path, size_t *len);

/* CLOCK_MONOTONIC in ns. */
uint64_t vr_now_ns(void);

/* Takes (lock 1) an OFD write lock on byte `byte` of fd, retried with short
 * sleeps until vr_now_ns() passes end (then -ETIMEDOUT), or drops it (0).
 * 0 or a negative errno. */
int vr_ofd_lock(int fd, long long byte, int lock, uint64_t end);

/* Opens a door (what, for messages: "books", "device book") read-only,
 * never following a symlink, never blocking on a FIFO: an fd, -ENOENT (no
 * message: there is none), -ELOOP (a symlink) or another negative errno
 * with a line in err. */
int vr_door_open_ro(int dfd, const char *dir, const char *name, const char *what, char *err,
                    size_t errlen);

/* A new door's bytes, for vr_tmp_write. */
struct vr_tmp_file {
	int dfd;          /* the directory */
	const char *dir;  /* its path, for messages */
	const char *name; /* the file's final name, for messages */
	const char *what; /* what it is, for messages ("books", "device book") */
	const char *stem; /* the temporary name's: .<stem>.<pid>.<n>.tmp */
	unsigned mode;    /* exactly this mode (fchmod: the umask is never touched) */
	const void *buf;
	size_t len;
};
/* Writes a new file's bytes under a temporary name in f->dfd (O_EXCL, never
 * through a symlink, close-on-exec), for the caller to link into place
 * complete. An fd with the name in tmp, or a negative errno with a line in
 * err (-EFBIG: the file size limit is below f->len; writing would raise
 * SIGXFSZ in the program); nothing is left behind on error. */
int vr_tmp_write(const struct vr_tmp_file *f, char *tmp, size_t tmplen, char *err, size_t errlen);

#endif /* VRAMCTL_REGISTRY_UTIL_H */
