/*
 * parkwire.c - the socket a process that may be parked listens on, and
 * asking it (parkwire.h).
 */
#include "common/parkwire.h"

#include "common/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- parking for a guarantee --------------------------------------------- */

#define FOR_LIST_MAX 4096 /* processes on one GPU looked at, at most */

struct candidate {
	int pid;
	long long idle_ms;
};

static int by_idle(const void *a, const void *b)
{
	long long x = ((const struct candidate *)a)->idle_ms,
	          y = ((const struct candidate *)b)->idle_ms;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* pid's idle time when it is running and idle long enough to be parked on
 * request, else -1. */
static long long parkable_idle(int pid)
{
	char reply[VR_PARK_LINE];
	long long idle = -1;
	if (vr_park_ask(pid, "state", reply, sizeof reply, 500) != 0 ||
	    strncmp(reply, "state running ", 14) != 0 ||
	    sscanf(reply + 14, "idle_ms=%lld", &idle) != 1 || idle < (long long)VR_PARK_IDLE_MIN_MS)
		return -1;
	return idle;
}

/* One round: every idle candidate asked, the longest idle first, until
 * *freed reaches r->bytes. -1 when the list cannot be had. */
static int for_round(const struct vr_park_for *r, int *pids, struct candidate *c, uint64_t *freed)
{
	int n = r->list(r->arg, pids, FOR_LIST_MAX), nc = 0;
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		long long idle = pids[i] == r->self ? -1 : parkable_idle(pids[i]);
		if (idle >= 0)
			c[nc++] = (struct candidate){pids[i], idle};
	}
	qsort(c, (size_t)nc, sizeof *c, by_idle);
	char req[VR_PARK_LINE];
	snprintf(req, sizeof req, "park-for %s", r->uuid);
	for (int i = 0; i < nc && *freed < r->bytes; i++) {
		char reply[VR_PARK_LINE];
		unsigned long long b = 0;
		if (vr_park_ask(c[i].pid, req, reply, sizeof reply, 150000) == 0 &&
		    sscanf(reply, "parked %llu", &b) == 1) {
			*freed += b;
			if (r->parked)
				r->parked(r->arg, c[i].pid, c[i].idle_ms, b);
		}
	}
	return 0;
}

uint64_t vr_park_for_guarantee(const struct vr_park_for *r)
{
	uint64_t freed = 0, deadline = vr_mono_ns() + r->wait_ms * 1000000ull;
	int *pids = malloc(FOR_LIST_MAX * sizeof *pids);
	struct candidate *c = malloc(FOR_LIST_MAX * sizeof *c);
	for (int rounds = 0; pids && c && rounds < 100000; rounds++) {
		if (for_round(r, pids, c, &freed) < 0 || freed >= r->bytes || !r->wait_ms ||
		    vr_mono_ns() >= deadline)
			break;
		/* With a wait: borrowers busy now may be idle in a moment. */
		struct timespec ts = {0, 250000000};
		nanosleep(&ts, NULL);
	}
	free(pids);
	free(c);
	return freed;
}
