/*
 * sys.h - the kernel's calls on descriptors, made directly (syscall(2)), for
 * the hand-over's socket (handover.c) and the thread that answers on it
 * (serve.c).
 *
 * That thread keeps its descriptors in a table of its own (serve.c): a
 * number there names another file than the same number in the program's
 * table. Sanitizers that model descriptors (ThreadSanitizer intercepts
 * close, accept, poll... and follows each number across the process)
 * model one table per process, and would report the thread's and the
 * program's uses of one number as races. Calls made here go past their
 * interceptors; errors are -1 with errno, as libc's.
 */
#ifndef VRAMCTL_REGISTRY_SYS_H
#define VRAMCTL_REGISTRY_SYS_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int vr_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}
static inline int vr_sys_close_range(unsigned first, unsigned last, unsigned flags)
{
#ifdef SYS_close_range
	return (int)syscall(SYS_close_range, first, last, flags);
#else
	(void)first, (void)last, (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}
static inline ssize_t vr_sys_read(int fd, void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_read, fd, buf, n);
}
static inline ssize_t vr_sys_write(int fd, const void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_write, fd, buf, n);
}
static inline int vr_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}
static inline int vr_sys_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}
static inline int vr_sys_fstatat(int dfd, const char *name, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dfd, name, st, flags);
}
static inline int vr_sys_openat(int dfd, const char *name, int flags, int mode)
{
	return (int)syscall(SYS_openat, dfd, name, flags, mode);
}
static inline int vr_sys_fchmodat(int dfd, const char *name, int mode)
{
	return (int)syscall(SYS_fchmodat, dfd, name, mode);
}
static inline int vr_sys_renameat(int odfd, const char *o, int ndfd, const char *n)
{
	return (int)syscall(SYS_renameat2, odfd, o, ndfd, n, 0);
}
static inline int vr_sys_linkat(int odfd, const char *o, int ndfd, const char *n)
{
	return (int)syscall(SYS_linkat, odfd, o, ndfd, n, 0);
}
static inline int vr_sys_unlinkat(int dfd, const char *name)
{
	return (int)syscall(SYS_unlinkat, dfd, name, 0);
}
static inline int vr_sys_socket(int domain, int type, int proto)
{
	return (int)syscall(SYS_socket, domain, type, proto);
}
static inline int vr_sys_bind(int s, const struct sockaddr *a, socklen_t len)
{
	return (int)syscall(SYS_bind, s, a, len);
}
static inline int vr_sys_listen(int s, int backlog)
{
	return (int)syscall(SYS_listen, s, backlog);
}
static inline int vr_sys_connect(int s, const struct sockaddr *a, socklen_t len)
{
	return (int)syscall(SYS_connect, s, a, len);
}
static inline int vr_sys_accept4(int s, int flags)
{
	return (int)syscall(SYS_accept4, s, NULL, NULL, flags);
}
static inline int vr_sys_getsockopt(int s, int level, int name, void *v, socklen_t *len)
{
	return (int)syscall(SYS_getsockopt, s, level, name, v, len);
}
static inline ssize_t vr_sys_sendmsg(int s, const struct msghdr *m, int flags)
{
	return (ssize_t)syscall(SYS_sendmsg, s, m, flags);
}
static inline ssize_t vr_sys_recvmsg(int s, struct msghdr *m, int flags)
{
	return (ssize_t)syscall(SYS_recvmsg, s, m, flags);
}
/* poll(2) with a timeout in ms (negative: none), through ppoll. */
static inline int vr_sys_poll(struct pollfd *p, nfds_t n, int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	return (int)syscall(SYS_ppoll, p, n, ms < 0 ? NULL : &ts, NULL, (size_t)(_NSIG / 8));
}

static inline int vr_sys_epoll_create(void)
{
	return (int)syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
}
static inline int vr_sys_epoll_ctl(int ep, int op, int fd, struct epoll_event *e)
{
	return (int)syscall(SYS_epoll_ctl, ep, op, fd, e);
}
/* epoll_wait(2), through epoll_pwait. */
static inline int vr_sys_epoll_wait(int ep, struct epoll_event *e, int n, int ms)
{
	return (int)syscall(SYS_epoll_pwait, ep, e, n, ms, NULL, (size_t)(_NSIG / 8));
}

#endif /* VRAMCTL_REGISTRY_SYS_H */
