/*
 * handover.c - the group's socket in the registry directory (handover.h).
 *
 * Why a socket: a memfd has no name, so books in one are reached through
 * a live member. /proc/PID/fd/FD of a member (memfd.c) needs its PID in
 * our PID namespace and its descriptor still open: a member in another
 * container, or one whose program closed its descriptors, could not hand
 * the books over, and the next joiner split the group (issue 37). A
 * socket bound in the directory is reached from any mount, PID, IPC or
 * network namespace that sees the directory, and the kernel passes the
 * memfd itself (SCM_RIGHTS).
 *
 * Addresses: a socket's path holds 107 bytes. The directory's own path is
 * used when it fits, else /proc/thread-self/fd/<dfd>/<name>, which names
 * the same place (the calling thread's descriptor of the directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "registry/handover.h"
#include "registry/layout.h"
#include "registry/sys.h"
#include "registry/util.h"

void vr_ho_close(struct vr_ho_fds *f)
{
	int *fds[VR_HO_FDS] = {&f->books, &f->door, &f->listen};
	for (int i = 0; i < VR_HO_FDS; i++) {
		if (*fds[i] >= 0)
			vr_sys_close(*fds[i]);
		*fds[i] = -1;
	}
}

void vr_ho_name(const char *group, char *buf, size_t len)
{
	snprintf(buf, len, ".%s.vrg.sock", group);
}

/* The address of `name` in the directory dfd (path dir). 0 or -ENAMETOOLONG. */
static int addr_of(int dfd, const char *dir, const char *name, struct sockaddr_un *sa,
                   socklen_t *salen)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = dir ? snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name) : -1;
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/thread-self/fd/%d/%s", dfd,
		             name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	*salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	return 0;
}

/* A new socket of the hand-over's kind, and the address of `name` in the
 * directory dfd: the socket, or a negative errno. */
static int socket_for(int dfd, const char *dir, const char *name, struct sockaddr_un *sa,
                      socklen_t *salen)
{
	int rc = addr_of(dfd, dir, name, sa, salen);
	if (rc < 0)
		return rc;
	int s = vr_sys_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	return s < 0 ? -errno : s;
}

int vr_ho_listen(int dfd, const char *dir, const char *group, int replace)
{
	static _Atomic unsigned counter;
	char name[VR_HO_NAME_MAX], tmp[VR_HO_NAME_MAX + 48];
	vr_ho_name(group, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%u.sock.tmp", group, (long)getpid(),
	         atomic_fetch_add(&counter, 1));
	struct sockaddr_un sa;
	socklen_t salen;
	int rc, s = socket_for(dfd, dir, tmp, &sa, &salen);
	if (s < 0)
		return s;
	if (vr_sys_bind(s, (struct sockaddr *)&sa, salen) < 0) {
		rc = -errno;
		vr_sys_close(s);
		return rc;
	}
	/* bind's mode went through the umask; the directory guards it. */
	if (vr_sys_fchmodat(dfd, tmp, 0666) < 0 || vr_sys_listen(s, SOMAXCONN) < 0)
		rc = -errno;
	else if (replace)
		rc = vr_sys_renameat(dfd, tmp, dfd, name) < 0 ? -errno : 0;
	else
		rc = vr_sys_linkat(dfd, tmp, dfd, name) < 0 ? -errno : 0;
	if (rc < 0 || !replace)
		vr_sys_unlinkat(dfd, tmp);
	if (rc < 0) {
		vr_sys_close(s);
		return rc;
	}
	return s;
}

/* Waits until fd is readable or vr_now_ns() passes end: 1, 0 (time), -errno. */
static int wait_readable(int fd, uint64_t end)
{
	for (;;) {
		uint64_t now = vr_now_ns();
		if (now >= end)
			return 0;
		uint64_t ms = (end - now + 999999) / 1000000;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = vr_sys_poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Connects s to the address, retrying while the listener's queue is full. */
static int connect_until(int s, const struct sockaddr_un *sa, socklen_t salen, uint64_t end)
{
	while (vr_sys_connect(s, (const struct sockaddr *)sa, salen) < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (vr_now_ns() >= end)
			return -ETIMEDOUT;
		struct timespec ts = {.tv_nsec = 1000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

#define VR_HO_MAXFDS 8

int vr_ho_sendfds(int s, const void *buf, size_t len, const int *fds, int n)
{
	if (n < 1 || n > VR_HO_MAXFDS)
		return -EINVAL;
	union {
		char buf[CMSG_SPACE(sizeof(int) * VR_HO_MAXFDS)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	return vr_sys_sendmsg(s, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

int vr_ho_recvfds(int s, void *buf, size_t len, int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VR_HO_MAXFDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	ssize_t got = vr_sys_recvmsg(s, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (got < 0)
		return -errno;
	int k = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < m; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (k < n)
				fds[k++] = fd;
			else
				vr_sys_close(fd);
		}
	}
	if (got == (ssize_t)len && k > 0 && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return k;
	for (int i = 0; i < k; i++)
		vr_sys_close(fds[i]);
	return got == 0 ? -ECONNRESET : -EPROTO;
}

/* Receives the answer on s into *out. 0 or a negative errno. */
static int receive(int s, struct vr_ho_fds *out)
{
	struct vr_ho_answer a;
	int fds[VR_HO_FDS];
	int rc = vr_ho_recvfds(s, &a, sizeof(a), fds, VR_HO_FDS);
	if (rc < 0)
		return rc;
	if (rc != VR_HO_FDS || a.magic != VR_HO_MAGIC || a.version != VR_LAYOUT_VERSION ||
	    a.nfds != VR_HO_FDS) {
		for (int i = 0; i < rc; i++)
			vr_sys_close(fds[i]);
		return -EPROTO;
	}
	out->books = fds[0];
	out->door = fds[1];
	out->listen = fds[2];
	out->key = a.key;
	return 0;
}

int vr_ho_fetch(int dfd, const char *dir, const char *group, uid_t owner, uint64_t end,
                struct vr_ho_fds *out)
{
	out->books = out->door = out->listen = -1;
	out->key = 0;
	char name[VR_HO_NAME_MAX];
	vr_ho_name(group, name, sizeof(name));
	struct sockaddr_un sa;
	socklen_t salen;
	int s = socket_for(dfd, dir, name, &sa, &salen);
	if (s < 0)
		return s;
	int rc = connect_until(s, &sa, salen, end);
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	/* Whoever made the listener: a socket of another user is not asked
	 * (root's is: root makes a user's books as theirs, vr_owner). */
	if (rc == 0 && (vr_sys_getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
	                (cr.uid != owner && cr.uid != 0)))
		rc = -EPERM;
	if (rc == 0) {
		rc = wait_readable(s, end);
		rc = rc > 0 ? receive(s, out) : rc == 0 ? -ETIMEDOUT : rc;
	}
	vr_sys_close(s);
	return rc;
}

int vr_ho_answer_one(int c, const struct vr_ho_fds *f, uid_t owner)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	if (vr_sys_getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0)
		return -errno;
	if (cr.uid != owner && cr.uid != geteuid() && cr.uid != 0)
		return -EPERM;
	struct vr_ho_answer a = {
	    .magic = VR_HO_MAGIC, .version = VR_LAYOUT_VERSION, .key = f->key, .nfds = VR_HO_FDS};
	int fds[VR_HO_FDS] = {f->books, f->door, f->listen};
	return vr_ho_sendfds(c, &a, sizeof(a), fds, VR_HO_FDS);
}
