/*
 * parkwire.c - the socket a process that may be parked listens on, and
 * asking it (parkwire.h).
 */
#include "common/parkwire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The abstract address of pid: sun_path[0] NUL, then the name. */
static socklen_t address(int pid, struct sockaddr_un *a)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, VR_PARK_SOCKET_PREFIX "%d", pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int vr_park_listen(int pid)
{
	struct sockaddr_un a;
	socklen_t len = address(pid, &a);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 16) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int vr_park_take(int lfd, char *req, size_t len, uid_t *uid)
{
	int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	struct ucred cr;
	socklen_t cl = sizeof cr;
	struct pollfd p = {.fd = cfd, .events = POLLIN};
	ssize_t n = -1;
	/* The asker sends at once; one that does not is not waited for long. */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && poll(&p, 1, 1000) == 1)
		n = recv(cfd, req, len - 1, 0);
	if (n <= 0) {
		close(cfd);
		return -EPROTO;
	}
	req[n] = '\0';
	req[strcspn(req, "\n")] = '\0';
	*uid = cr.uid;
	return cfd;
}

void vr_park_answer(int cfd, const char *line)
{
	(void)!send(cfd, line, strlen(line), MSG_NOSIGNAL);
	close(cfd);
}

int vr_park_ask(int pid, const char *req, char *reply, size_t len, int timeout_ms)
{
	struct sockaddr_un a;
	socklen_t alen = address(pid, &a);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (connect(fd, (struct sockaddr *)&a, alen) != 0)
		rc = errno == ECONNREFUSED || errno == ENOENT ? -ECONNREFUSED : -errno;
	else if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		rc = -errno;
	if (rc == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr;
		while ((pr = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		ssize_t n = pr == 1 ? recv(fd, reply, len - 1, 0) : -1;
		if (pr == 0)
			rc = -ETIMEDOUT;
		else if (n <= 0)
			rc = n == 0 ? -EPROTO : -errno;
		else
			reply[n] = '\0';
	}
	close(fd);
	return rc;
}
