/*
 * guard.c - `vramctl guard`: the guard service, root's program that writes
 * guarantees into the device books for users who are not root (#38;
 * vramctl-guard(8), docs/threat-model.md).
 *
 * systemd starts it on the first connection to /run/vramctl/guard.sock
 * (vramctl-guard.socket, mode 0666: every user may ask); it can also be
 * started by hand with --socket. Each request is one line (registry/
 * devguard.h); the caller's user and process come from the kernel
 * (SO_PEERCRED, SO_PEERPIDFD), never from the request. A guarantee is
 * admitted by vr_devbook_admit, the one place that decides, with the
 * card's figures from NVML, and lives while one of the processes that
 * asked for it does: the service holds a pidfd of each and ends the entry
 * when the last one exits. Clients are served from one poll loop, each with
 * a deadline, so a client that connects and says nothing holds up no one.
 * With nothing held and no one asking for --idle seconds it exits (systemd
 * starts it again); a new one adopts the entries the last one kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/contract.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/text.h"
#include "monitor/nvml.h"
#include "registry/devbook.h"
#include "registry/devguard.h"
#include "registry/proc.h"
#include "registry/util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* Clients served at once (more wait in the listen queue), the longest a
 * client may take to send its line, holders kept, entries per user and
 * device. */
#define CLIENTS_MAX  32
#define CLIENT_MS    2000
#define HOLDERS_MAX  4096
#define PER_USER_MAX 8
#define DEFAULT_IDLE 60

struct client {
	int fd;
	int pidfd;
	struct ucred cred;
	uint64_t deadline;
	size_t got;
	char buf[256];
};

/* A process a service-kept entry lives for. */
struct holder {
	int pidfd;
	struct vr_devholder h;
	unsigned char uuid[16];
	uint32_t uid;
	uint64_t ident;
};

static struct {
	const char *dir; /* the device books' directory (NULL: the default) */
	struct vr_devholder self;
	struct mon_nvml *nv;
	struct client c[CLIENTS_MAX];
	struct holder *h;
	int nh;
} g;

static void guard_usage(FILE *f)
{
	fprintf(f, "usage: vramctl guard [--socket PATH] [--device-dir DIR] [--idle SECONDS]\n"
	           "       vramctl guard --reclaim [--device-dir DIR]\n"
	           "\n"
	           "Root's guard service: admits guarantees in the device books for users who\n"
	           "are not root, and ends each when the processes it lives for are gone.\n"
	           "Started by systemd (vramctl-guard.socket) on the first request.\n"
	           "\n"
	           "  --socket PATH       listen on PATH (mode 0666) instead of systemd's socket\n"
	           "  --device-dir DIR    where the device books are (default /run/vramctl)\n"
	           "  --idle SECONDS      exit after this long with nothing held (0: never;\n"
	           "                      default 60)\n"
	           "  --reclaim           end every guarantee whose processes are gone, and exit\n"
	           "  -h, --help          this help\n");
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vramctl guard: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The listening socket: systemd's (LISTEN_FDS), or path's. */
static int listener(const char *path)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!path && pid && fds && atol(pid) == (long)getpid() && atoi(fds) >= 1) {
		fcntl(3, F_SETFD, FD_CLOEXEC);
		return 3;
	}
	if (!path) {
		say("no socket: started outside systemd, give --socket PATH");
		return -1;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof a.sun_path) {
		say("--socket %s: too long", path);
		return -1;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, 0666) != 0 ||
	    listen(fd, 64) != 0) {
		say("cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* NVML's figures of the GPU with this raw UUID: 0, or -EIO. */
static int card(const unsigned char uuid[16], uint64_t *free_b, uint64_t *total)
{
	char text[48], err[256];
	vr_format_uuid(uuid, text, sizeof text);
	if (!g.nv && mon_nvml_open(NULL, &g.nv, err, sizeof err) != 0)
		return -EIO;
	return mon_nvml_card(g.nv, text, -1, NULL, free_b, total) == 0 ? 0 : -EIO;
}

static int card_free(void *arg, uint64_t *free_b)
{
	uint64_t total;
	return card(arg, free_b, &total);
}

static void hold(int pidfd, const struct vr_devholder *h, const unsigned char uuid[16],
                 uint32_t uid, uint64_t ident)
{
	if (g.nh == HOLDERS_MAX) {
		close(pidfd); /* the book keeps it for its recorded holders */
		return;
	}
	struct holder *x = &g.h[g.nh++];
	x->pidfd = pidfd;
	x->h = *h;
	memcpy(x->uuid, uuid, 16);
	x->uid = uid;
	x->ident = ident;
}

/* A holder recorded by a service that is gone (vr_devbook_adopt). */
static void adopt(void *arg, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                  const struct vr_devholder *h)
{
	(void)arg;
	int fd = (int)syscall(SYS_pidfd_open, h->pid, 0);
	uint64_t start;
	if (fd < 0)
		return;
	if (vr_proc_start_time(NULL, h->pid, &start) != 0 || start != h->start) {
		close(fd);
		return;
	}
	hold(fd, h, uuid, uid, ident);
}

/* How many entries uid has on the GPU. */
static int entries_of(const unsigned char uuid[16], uint32_t uid)
{
	struct vr_devbook_view *v = malloc(sizeof *v);
	int n = 0;
	if (v && vr_devbook_read(g.dir, uuid, v) == 0)
		for (int k = 0; k < v->n; k++)
			n += v->e[k].live && v->e[k].uid == uid;
	free(v);
	return n;
}

/* One request of client c: its answer into out. */
static void serve(struct client *c, const struct vr_guard_req *r, char *out, size_t len)
{
	char err[512] = "";
	uint64_t free_b = 0, total = 0, given = 0;
	if (card(r->uuid, &free_b, &total) < 0) {
		snprintf(out, len,
		         "no the GPU is not one NVML lists here, or NVML cannot tell its "
		         "memory\n");
		return;
	}
	if (r->verb == VR_GUARD_BOOK) {
		int rc = vr_devbook_make(g.dir, r->uuid, total, err, sizeof err);
		snprintf(out, len, rc < 0 ? "no %s\n" : "ok 0\n", err);
		return;
	}
	struct vr_devholder h = {.pid = c->cred.pid};
	if (vr_proc_start_time(NULL, c->cred.pid, &h.start) != 0 || c->pidfd < 0) {
		snprintf(out, len, "no the asking process cannot be told apart from others\n");
		return;
	}
	if (entries_of(r->uuid, c->cred.uid) >= PER_USER_MAX) {
		snprintf(out, len, "no your user holds %d guarantees on this GPU already\n",
		         PER_USER_MAX);
		return;
	}
	struct vr_devbook_ask a = {.capacity = total,
	                           .uid = c->cred.uid,
	                           .ident = r->ident,
	                           .guarantee = r->bytes,
	                           .group = r->group,
	                           .holder = h,
	                           .manager = g.self,
	                           .card_free = card_free,
	                           .arg = (void *)r->uuid};
	int rc = vr_devbook_admit(g.dir, r->uuid, &a, &given, err, sizeof err);
	if (rc < 0) {
		snprintf(out, len, "no %s\n", err);
		return;
	}
	hold(c->pidfd, &h, r->uuid, c->cred.uid, r->ident);
	c->pidfd = -1;
	snprintf(out, len, "ok %llu\n", (unsigned long long)given);
}

static void drop(struct client *c)
{
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->fd);
	c->fd = -1;
}

/* Reads what client c sent; answers once its line is whole. */
static void readable(struct client *c)
{
	ssize_t n = read(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		drop(c);
		return;
	}
	c->got += (size_t)n;
	c->buf[c->got] = '\0';
	char *nl = strchr(c->buf, '\n'), out[640];
	if (!nl && c->got < sizeof c->buf - 1)
		return;
	struct vr_guard_req r;
	if (!nl || (*nl = '\0', vr_guard_parse(c->buf, &r) != 0))
		snprintf(out, sizeof out, "no a request this service does not know\n");
	else
		serve(c, &r, out, sizeof out);
	if (send(c->fd, out, strlen(out), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is gone: whatever it was given ends with it */
	}
	drop(c);
}

static void accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct client *c = NULL;
	for (int i = 0; i < CLIENTS_MAX && !c; i++)
		if (g.c[i].fd < 0)
			c = &g.c[i];
	socklen_t l = sizeof c->cred;
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &l) != 0) {
		close(fd); /* busy: the client says so and may try again */
		return;
	}
	c->fd = fd;
	c->got = 0;
	c->deadline = vr_now_ns() + CLIENT_MS * 1000000ull;
	l = sizeof c->pidfd;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &c->pidfd, &l) != 0) {
		/* An older kernel: the PID the kernel gave at connect, checked by
		 * its start time when the request is served. */
		c->pidfd = (int)syscall(SYS_pidfd_open, c->cred.pid, 0);
	}
	fcntl(c->pidfd, F_SETFD, FD_CLOEXEC);
}

/* Holder i is gone: the entry goes with its last holder here. */
static void gone(int i)
{
	struct holder x = g.h[i];
	close(x.pidfd);
	g.h[i] = g.h[--g.nh];
	int other = -1;
	for (int k = 0; k < g.nh && other < 0; k++)
		if (!memcmp(g.h[k].uuid, x.uuid, 16) && g.h[k].uid == x.uid &&
		    g.h[k].ident == x.ident)
			other = k;
	if (other < 0) {
		vr_devbook_end(g.dir, x.uuid, x.uid, x.ident);
		return;
	}
	vr_devbook_leave(g.dir, x.uuid, x.uid, x.ident, x.h.pid);
	/* Another live holder takes the slot in the book (its record for a
	 * reader, and for a service that starts after this one). */
	char err[128];
	uint64_t given;
	struct vr_devbook_ask a = {
	    .uid = x.uid, .ident = x.ident, .holder = g.h[other].h, .manager = g.self};
	vr_devbook_admit(g.dir, x.uuid, &a, &given, err, sizeof err);
}

/* Adopts what a service before this one kept, book by book (and ends the
 * entries whose processes are gone). */
static void adopt_all(void)
{
	unsigned char uuids[64][16];
	int n = vr_devbook_list(g.dir, uuids, 64);
	for (int i = 0; i < n && i < 64; i++)
		vr_devbook_adopt(g.dir, uuids[i], &g.self, adopt, NULL);
}

/* --reclaim: what adopting does, with nobody to adopt for. */
static void forget_holder(void *arg, const unsigned char uuid[16], uint32_t uid, uint64_t ident,
                          const struct vr_devholder *h)
{
	(void)arg, (void)uuid, (void)uid, (void)ident, (void)h;
}

static int reclaim_all(void)
{
	unsigned char uuids[64][16];
	int n = vr_devbook_list(g.dir, uuids, 64), left = 0;
	if (n < 0 && n != -ENOENT) {
		say("cannot list the device books: %s", strerror(-n));
		return VR_EXIT_ERROR;
	}
	/* Entries a live service keeps are left to it; the rest whose
	 * processes are gone end (vr_devbook_adopt reclaims as it goes). */
	for (int i = 0; i < n && i < 64; i++) {
		struct vr_devbook_view v;
		vr_devbook_adopt(g.dir, uuids[i], NULL, forget_holder, NULL);
		if (vr_devbook_read(g.dir, uuids[i], &v) == 0)
			left += v.n;
	}
	return left ? 1 : 0;
}

static int loop(int lfd, int idle)
{
	struct pollfd *p = calloc(1 + CLIENTS_MAX + HOLDERS_MAX, sizeof *p);
	if (!p)
		return VR_EXIT_ERROR;
	uint64_t quiet_since = vr_now_ns();
	for (;;) {
		int n = 0, who[CLIENTS_MAX];
		p[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		int busy = 0;
		for (int i = 0; i < CLIENTS_MAX; i++)
			if (g.c[i].fd >= 0) {
				who[busy++] = i;
				p[n++] = (struct pollfd){.fd = g.c[i].fd, .events = POLLIN};
			}
		int first_holder = n;
		for (int i = 0; i < g.nh; i++)
			p[n++] = (struct pollfd){.fd = g.h[i].pidfd, .events = POLLIN};
		int rc = poll(p, (nfds_t)n, 200);
		if (rc < 0 && errno != EINTR)
			break;
		uint64_t now = vr_now_ns();
		for (int k = 0; k < busy; k++) {
			struct client *c = &g.c[who[k]];
			if (p[1 + k].revents)
				readable(c);
			if (c->fd >= 0 && now > c->deadline)
				drop(c); /* said nothing in time */
		}
		for (int i = g.nh - 1; i >= 0; i--)
			if (first_holder + i < n && p[first_holder + i].revents)
				gone(i);
		if (p[0].revents & POLLIN)
			accept_one(lfd);
		if (busy || g.nh || (p[0].revents & POLLIN))
			quiet_since = now;
		else if (idle && now - quiet_since > (uint64_t)idle * 1000000000ull)
			break;
	}
	free(p);
	return 0;
}

int cmd_guard(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'}, {"device-dir", required_argument, NULL, 'd'},
	    {"idle", required_argument, NULL, 'i'},   {"reclaim", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	const char *path = NULL;
	int idle = DEFAULT_IDLE, opt, reclaim = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'd':
			if (optarg[0] != '/') {
				say("--device-dir %s: not an absolute path", optarg);
				return VR_EXIT_ERROR;
			}
			g.dir = optarg;
			break;
		case 'i': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 86400) {
				say("--idle %s: seconds, 0 to 86400", optarg);
				return VR_EXIT_ERROR;
			}
			idle = (int)v;
			break;
		}
		case 'r':
			reclaim = 1;
			break;
		case 'h':
			guard_usage(stdout);
			return 0;
		default:
			guard_usage(stderr);
			return VR_EXIT_ERROR;
		}
	}
	if (optind < argc) {
		guard_usage(stderr);
		return VR_EXIT_ERROR;
	}
	if (geteuid() != 0) {
		say("must run as root: it writes the device books (vramctl-guard(8))");
		return VR_EXIT_ERROR;
	}
	if (g.dir)
		setenv(VR_ENV_DEVICE_DIR, g.dir, 1);
	if (reclaim)
		return reclaim_all();
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < CLIENTS_MAX; i++)
		g.c[i].fd = g.c[i].pidfd = -1;
	g.h = calloc(HOLDERS_MAX, sizeof *g.h);
	g.self.pid = (int32_t)getpid();
	if (!g.h || vr_proc_start_time(NULL, 0, &g.self.start) != 0) {
		say("cannot start: %s", strerror(errno));
		return VR_EXIT_ERROR;
	}
	int lfd = listener(path);
	if (lfd < 0)
		return VR_EXIT_ERROR;
	adopt_all();
	int rc = loop(lfd, idle);
	if (g.nv)
		mon_nvml_close(g.nv);
	return rc;
}
