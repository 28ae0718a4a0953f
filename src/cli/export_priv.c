/*
 * export_priv.c - the exporter's collector and server (export_priv.h).
 *
 * The socket pair carries, from the collector: once, a word (u32 length,
 * then NVML's error text, empty when it opened); then for each request
 * byte from the server, a header (i32 status, u32 0, u64 length) and the
 * Prometheus text. Nothing the server sends is read but that one byte.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/export_priv.h"

/* The uid and gid of nobody where there is no passwd entry (a minimal
 * container image). */
#define NOBODY_ID 65534

/* The capabilities the node's reads use, where the exporter holds them:
 * entering a container's IPC namespace (SYS_ADMIN), reading another user's
 * /proc/PID/ns, environ, cgroup and fd (SYS_PTRACE), attaching another
 * user's segment (IPC_OWNER) and reading books directories it does not own
 * (DAC_READ_SEARCH). docs/kubernetes.md, "The exporter's privileges". */
static const int read_caps[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_IPC_OWNER, CAP_DAC_READ_SEARCH};

static int is_read_cap(int cap)
{
	for (size_t i = 0; i < sizeof(read_caps) / sizeof(read_caps[0]); i++)
		if (read_caps[i] == cap)
			return 1;
	return 0;
}

/*
 * No new privileges (an exec gains none), and every capability but those
 * kept (keep_reads: the read ones the process holds already; else none)
 * leaves the bounding, permitted, effective and inheritable sets (the
 * ambient set follows). Dropping from the bounding set takes CAP_SETPCAP:
 * without it (not root) the bounding set stays, and nothing can be gained
 * from it under no_new_privs. 0, or -1 with a message.
 */
static int drop_caps(int keep_reads, const char *who)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof(data));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "vramctl: export: %s: cannot set no_new_privs: %s\n", who,
		        strerror(errno));
		return -1;
	}
	if (syscall(SYS_capget, &hdr, data) != 0) {
		fprintf(stderr, "vramctl: export: %s: cannot read its capabilities: %s\n", who,
		        strerror(errno));
		return -1;
	}
	int setpcap = !!(data[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP));
	for (int cap = 0; setpcap && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
		int keep = keep_reads && is_read_cap(cap) &&
		           (data[CAP_TO_INDEX(cap)].permitted & CAP_TO_MASK(cap));
		if (!keep && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
			fprintf(stderr, "vramctl: export: %s: cannot drop capability %d: %s\n", who,
			        cap, strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		uint32_t keep = 0;
		for (size_t k = 0; keep_reads && k < sizeof(read_caps) / sizeof(read_caps[0]); k++)
			if (CAP_TO_INDEX(read_caps[k]) == i)
				keep |= CAP_TO_MASK(read_caps[k]);
		data[i].permitted &= keep;
		data[i].effective = data[i].permitted;
		data[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &hdr, data) != 0) {
		fprintf(stderr, "vramctl: export: %s: cannot drop its capabilities: %s\n", who,
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* The serving user's uid and gid: a name or a number; NULL is nobody
 * (its passwd entry, else 65534). 0, or -1 with a message. */
static int user_ids(const char *user, uid_t *uid, gid_t *gid)
{
	const struct passwd *pw = getpwnam(user ? user : "nobody");
	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long v = user ? strtoul(user, &end, 10) : NOBODY_ID;
	if (user && (errno || end == user || *end || v >= (uid_t)-1)) {
		fprintf(stderr, "vramctl: export: --user '%s': no such user (a name or a uid)\n",
		        user);
		return -1;
	}
	*uid = (uid_t)v;
	*gid = (gid_t)v;
	return 0;
}

/* The server becomes the serving user (as root) and drops every
 * capability. 0, or -1 with a message. */
static int become_server(const char *user)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (geteuid() == 0 || user) {
		if (user_ids(user, &uid, &gid) < 0)
			return -1;
		if (uid == 0) {
			fprintf(stderr,
			        "vramctl: export: --user: the server does not run as root\n");
			return -1;
		}
	}
	if (uid != geteuid()) {
		/* The bounding set while CAP_SETPCAP is still ours; then the ids,
		 * which clears the permitted and effective sets (no keepcaps). */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			return -1;
		for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
			if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
				prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
		if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
		    setresuid(uid, uid, uid) != 0) {
			fprintf(stderr,
			        "vramctl: export: cannot serve as uid %u: %s (leaving uid 0 takes "
			        "CAP_SETUID and CAP_SETGID; or run export as that user)\n",
			        (unsigned)uid, strerror(errno));
			return -1;
		}
	}
	return drop_caps(0, "server");
}

/* Writes (out set) or reads all n bytes at p; a closed peer is -1, never
 * SIGPIPE. */
static int io_all(int fd, void *p, size_t n, int out)
{
	char *c = p;
	while (n) {
		ssize_t k = out ? send(fd, c, n, MSG_NOSIGNAL) : read(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	return io_all(fd, (void *)p, n, 1);
}

static int read_all(int fd, void *p, size_t n)
{
	return io_all(fd, p, n, 0);
}

struct reply_head {
	int32_t rc;
	uint32_t pad;
	uint64_t len;
};

/* The collector: one answer per request byte, until the server's end
 * closes. Never returns. */
static void collector(int fd, const struct exp_what *what)
{
	char nverr[256] = "";
	struct mon_sources src = {.registry_dir = what->registry_dir};
	mon_nvml_open(NULL, &src.nvml, nverr, sizeof(nverr));
	src.nvml_error = nverr;
	uint32_t n = src.nvml ? 0 : (uint32_t)strlen(nverr);
	if (write_all(fd, &n, sizeof(n)) < 0 || write_all(fd, nverr, n) < 0)
		_exit(1);
	char req;
	while (read_all(fd, &req, 1) == 0) {
		struct mon_model m = {0};
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		int rc = f ? mon_collect(&src, &m) : -ENOMEM;
		if (rc == 0)
			rc = mon_format_prom(f, &m);
		if (rc == 0 && what->hami)
			rc = mon_format_hami(f, &m, &what->hopts);
		mon_model_clear(&m);
		if (f && fclose(f) != 0 && rc == 0)
			rc = -EIO;
		struct reply_head h = {.rc = rc, .len = rc == 0 ? len : 0};
		int w =
		    write_all(fd, &h, sizeof(h)) == 0 && (!h.len || write_all(fd, buf, len) == 0);
		free(buf);
		if (!w)
			break;
	}
	mon_nvml_close(src.nvml);
	_exit(0);
}

int exp_split(int listen_fd, const char *user, const struct exp_what *what, struct exp_link *l)
{
	int sv[2];
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		fprintf(stderr, "vramctl: export: cannot make the collector's socket: %s\n",
		        strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vramctl: export: cannot start the collector: %s\n",
		        strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* The collector: no network, the read capabilities only; it goes
		 * with the server (a SIGKILL when the server dies, EOF when it
		 * closes its end), and Ctrl-C is the server's to act on. */
		close(sv[0]);
		close(listen_fd);
		signal(SIGINT, SIG_IGN);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != parent || drop_caps(1, "collector") < 0)
			_exit(1);
		collector(sv[1], what);
	}
	close(sv[1]);
	l->fd = sv[0];
	l->pid = pid;
	uint32_t n = 0;
	if (become_server(user) < 0) {
		exp_close(l);
		return -1;
	}
	if (read_all(l->fd, &n, sizeof(n)) < 0 || n >= sizeof(l->nvml_error) ||
	    (n && read_all(l->fd, l->nvml_error, n) < 0)) {
		fprintf(stderr, "vramctl: export: the collector did not start\n");
		exp_close(l);
		return -1;
	}
	l->nvml_error[n] = '\0';
	return 0;
}

int exp_scrape(struct exp_link *l, char **buf, size_t *len)
{
	struct reply_head h;
	char req = 'm';
	*buf = NULL;
	*len = 0;
	if (l->fd < 0 || write_all(l->fd, &req, 1) < 0 || read_all(l->fd, &h, sizeof(h)) < 0)
		return -1;
	if (h.len > ((uint64_t)1 << 32) || !(*buf = malloc(h.len ? h.len : 1)) ||
	    read_all(l->fd, *buf, h.len) < 0) {
		free(*buf);
		*buf = NULL;
		close(l->fd); /* out of step with the collector: no more answers */
		l->fd = -1;
		return -1;
	}
	*len = h.len;
	if (h.rc == 0)
		return 0;
	free(*buf);
	*buf = NULL;
	return -1;
}

int exp_collector_gone(struct exp_link *l)
{
	int st;
	if (l->pid <= 0 || waitpid(l->pid, &st, WNOHANG) != l->pid)
		return 0;
	l->pid = 0;
	if (WIFSIGNALED(st))
		fprintf(stderr, "vramctl: export: the collector died (signal %d)\n", WTERMSIG(st));
	else
		fprintf(stderr, "vramctl: export: the collector ended (status %d)\n",
		        WEXITSTATUS(st));
	return 1;
}

void exp_close(struct exp_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->pid > 0) {
		int st;
		while (waitpid(l->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	l->pid = 0;
}
