/*
 * devguard.c - the guard service's protocol and its client (devguard.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/text.h"
#include "registry/devguard.h"
#include "registry/util.h"

int vr_guard_socket(char *buf, size_t len)
{
	const char *e = getenv(VR_ENV_GUARD_SOCKET);
	int n = snprintf(buf, len, "%s", e && *e ? e : VR_GUARD_SOCKET);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void hex16(const unsigned char u[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

int vr_guard_format(const struct vr_guard_req *r, char *buf, size_t len)
{
	char u[33];
	hex16(r->uuid, u);
	int n = r->verb == VR_GUARD_BOOK
	            ? snprintf(buf, len, "book %s\n", u)
	            : snprintf(buf, len, "admit %s %" PRIu64 " %016" PRIx64 " %s\n", u, r->bytes,
	                       r->ident, r->group[0] ? r->group : "-");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

static int parse_uuid(const char *s, unsigned char u[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		u[i] = (unsigned char)v;
	}
	return strlen(s) == 32 ? 0 : -EINVAL;
}

int vr_guard_parse(const char *line, struct vr_guard_req *r)
{
	char verb[8], u[40], group[80] = "";
	uint64_t bytes = 0, ident = 0;
	memset(r, 0, sizeof *r);
	int n =
	    sscanf(line, "%7s %39s %" SCNu64 " %" SCNx64 " %79s", verb, u, &bytes, &ident, group);
	if (n >= 2 && !strcmp(verb, "book") && parse_uuid(u, r->uuid) == 0) {
		r->verb = VR_GUARD_BOOK;
		return n == 2 ? 0 : -EINVAL;
	}
	if (n == 5 && !strcmp(verb, "admit") && parse_uuid(u, r->uuid) == 0 && bytes && ident) {
		r->verb = VR_GUARD_ADMIT;
		r->bytes = bytes;
		r->ident = ident;
		if (strcmp(group, "-"))
			vr_text_copy(r->group, sizeof r->group, group);
		return 0;
	}
	return -EINVAL;
}

/* Reads one line (up to len-1 bytes) from fd before the deadline. */
static int read_line(int fd, char *buf, size_t len, uint64_t end)
{
	size_t got = 0;
	while (got + 1 < len) {
		uint64_t now = vr_now_ns();
		if (now >= end)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int rc = poll(&p, 1, (int)((end - now) / 1000000 + 1));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return rc < 0 ? -errno : -ETIMEDOUT;
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return got ? 0 : -EPIPE;
}

int vr_guard_ask(const struct vr_guard_req *r, uint64_t *bytes, char *err, size_t errlen)
{
	char path[108], line[256], reply[512];
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	*bytes = 0;
	if (vr_guard_socket(path, sizeof path) < 0 || strlen(path) >= sizeof a.sun_path) {
		vr_seterr(err, errlen, "the guard service's socket path is too long");
		return -ENAMETOOLONG;
	}
	int n = vr_guard_format(r, line, sizeof line);
	if (n < 0) {
		vr_seterr(err, errlen, "request too long");
		return n;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		vr_seterr(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		int e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			vr_seterr(err, errlen, "no guard service at %s: %s", path, VR_GUARD_HOWTO);
		else
			vr_seterr(err, errlen, "the guard service at %s: %s", path, strerror(e));
		return -e;
	}
	int rc = send(fd, line, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -errno;
	if (rc == 0)
		rc =
		    read_line(fd, reply, sizeof reply, vr_now_ns() + VR_GUARD_WAIT_MS * 1000000ull);
	close(fd);
	if (rc < 0) {
		vr_seterr(err, errlen, "the guard service at %s %s", path,
		          rc == -ETIMEDOUT ? "did not answer" : "closed the connection");
		return rc;
	}
	if (!strncmp(reply, "ok ", 3)) {
		*bytes = strtoull(reply + 3, NULL, 10);
		return 0;
	}
	vr_seterr(err, errlen, "%s",
	          strncmp(reply, "no ", 3) ? "the guard service's answer is garbled" : reply + 3);
	return -EACCES;
}
