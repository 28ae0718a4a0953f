/*
 * proc.c - the one /proc layer (see proc.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/proc.h"
#include "registry/util.h"

static const char *root_or_default(const char *root)
{
	return root && *root ? root : "/proc";
}

ssize_t vr_proc_read(const char *root, pid_t pid, const char *name, char *buf, size_t len)
{
	char path[320];
	if (pid > 0)
		snprintf(path, sizeof(path), "%s/%d/%s", root_or_default(root), (int)pid, name);
	else
		snprintf(path, sizeof(path), "%s/self/%s", root_or_default(root), name);
	return vr_read_file(path, buf, len);
}

/* Field `field` (from 3) of root/pid/stat, as a number. The command
 * (field 2) may hold spaces and parentheses: fields are counted from the
 * last ')'. 0, -ENOENT or -EINVAL. */
static int stat_field(const char *buf, int field, unsigned long long *out)
{
	const char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int f = 2; f < field; f++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	char *end;
	*out = strtoull(p, &end, 10);
	return end == p ? -EINVAL : 0;
}

static int read_stat(const char *root, pid_t pid, char *buf, size_t len)
{
	return pid < 0 || vr_proc_read(root, pid, "stat", buf, len) <= 0 ? -ENOENT : 0;
}

int vr_proc_start_time(const char *root, pid_t pid, uint64_t *out)
{
	char buf[1024];
	unsigned long long v;
	int rc = read_stat(root, pid, buf, sizeof buf);
	if (rc == 0 && (rc = stat_field(buf, 22, &v)) == 0)
		*out = v;
	return rc;
}

int vr_proc_parent(const char *root, pid_t pid, pid_t *ppid, uint64_t *start)
{
	char buf[1024];
	unsigned long long p, s;
	int rc = read_stat(root, pid, buf, sizeof buf);
	if (rc == 0 && (rc = stat_field(buf, 4, &p)) == 0 && (rc = stat_field(buf, 22, &s)) == 0) {
		*ppid = (pid_t)p;
		*start = s;
	}
	return rc;
}

int vr_proc_stopped(const char *root, pid_t pid)
{
	char path[320], name[320], buf[512];
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%d/task", root_or_default(root), (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int stopped = 0, seen = 0;
	struct dirent *e;
	while (!stopped && seen < VR_PROC_TASKS_MAX && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(name, sizeof(name), "task/%.32s/stat", e->d_name);
		const char *p;
		if (vr_proc_read(root, pid, name, buf, sizeof(buf)) <= 0 ||
		    !(p = strrchr(buf, ')')))
			continue;
		seen++;
		stopped = p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
	}
	closedir(d);
	return stopped ? 1 : seen ? 0 : -ENOENT;
}

int vr_proc_status(const char *root, pid_t pid, struct vr_proc_status *out)
{
	char buf[4096];
	memset(out, 0, sizeof(*out));
	if (pid < 0 || vr_proc_read(root, pid, "status", buf, sizeof(buf)) <= 0)
		return -ENOENT;
	const char *l = strstr(buf, "\nNSpid:");
	if (l) {
		l += 7;
		for (int first = 1;; first = 0) {
			char *end;
			long v = strtol(l, &end, 10);
			if (end == l)
				break;
			if (first)
				out->nspid_outer = (pid_t)v;
			out->nspid_inner = (pid_t)v;
			out->have |= VR_PROC_NSPID;
			l = end;
			if (*l == '\n' || !*l)
				break;
		}
	}
	l = strstr(buf, "\nUid:");
	if (l) {
		char *end;
		out->uid = (uid_t)strtoul(l + 5, &end, 10);
		out->euid = (uid_t)strtoul(end, NULL, 10);
		out->have |= VR_PROC_UID;
	}
	return 0;
}

uid_t vr_proc_outer_uid(void)
{
	uid_t uid = getuid();
	struct stat ns;
	char buf[1024];
	if (stat("/proc/self/ns/user", &ns) != 0 || ns.st_ino == VR_USER_INIT_INO ||
	    vr_proc_read(NULL, 0, "uid_map", buf, sizeof(buf)) <= 0)
		return uid;
	/* "inside outside count" per line; read by the process itself, the
	 * outside is its parent namespace's. */
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long in, out, count;
		if (sscanf(l, "%lu %lu %lu", &in, &out, &count) == 3 && uid >= in &&
		    uid - in < count)
			return (uid_t)(out + (uid - in));
	}
	return uid;
}

void vr_proc_cmdline(const char *root, pid_t pid, int comm, char *out, size_t len)
{
	char buf[512];
	out[0] = '\0';
	ssize_t n = vr_proc_read(root, pid, "cmdline", buf, sizeof(buf));
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		while (n > 0 && buf[n - 1] == ' ')
			buf[--n] = '\0';
		snprintf(out, len, "%s", buf); /* cut to len - 1 bytes */
	}
	if (!out[0] && comm && vr_proc_read(root, pid, "comm", buf + 1, sizeof(buf) - 2) > 0) {
		/* A kernel thread or a zombie has no command line: show [comm]. */
		buf[0] = '[';
		size_t l = strcspn(buf, "\n");
		buf[l] = ']';
		buf[l + 1] = '\0';
		snprintf(out, len, "%s", buf);
	}
}

int vr_proc_exists(const char *root, pid_t pid)
{
	if (pid <= 0)
		return 0;
	/* kill(pid, 0) is the cheapest existence check; tests use a fake root. */
	if (!root || !*root || !strcmp(root, "/proc"))
		return kill(pid, 0) == 0 || errno == EPERM;
	char path[320];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%d", root, (int)pid);
	return stat(path, &st) == 0;
}

/* Skips spaces, then one word; returns a pointer past it (NULL at the end). */
static const char *word(const char *p, const char **start, size_t *len)
{
	while (*p == ' ')
		p++;
	if (!*p)
		return NULL;
	*start = p;
	while (*p && *p != ' ')
		p++;
	*len = (size_t)(p - *start);
	return p;
}

/*
 * A number in base 10 or 16 after optional spaces and, where neg is not
 * NULL, a minus sign (OFD locks show PID -1). Returns a pointer past its
 * digits, or NULL when there is none. strtol and strtoul cost more than the
 * rest of a 2,000-line /proc/locks together; this file's numbers are
 * plain digits that fit (no 0x, no plus, no overflow to report).
 */
static const char *lock_num(const char *p, unsigned base, int *neg, unsigned long long *out)
{
	while (*p == ' ')
		p++;
	if (neg) {
		*neg = *p == '-';
		p += *neg;
	}
	unsigned long long v = 0;
	const char *start = p;
	for (;; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		v = v * base + d;
	}
	if (p == start)
		return NULL;
	*out = v;
	return p;
}

/* Parses one /proc/locks line by hand (sscanf costs more than the rest). */
static int parse_lock_line(const char *p, struct vr_proc_lock *h)
{
	const char *w;
	size_t n;
	int neg;
	unsigned long long v;
	if (!(p = word(p, &w, &n)) || w[n - 1] != ':') /* "N:" */
		return -1;
	if (!(p = word(p, &w, &n)))
		return -1;
	if (n == 5 && !memcmp(w, "POSIX", 5))
		h->ofd = 0;
	else if (n == 6 && !memcmp(w, "OFDLCK", 6))
		h->ofd = 1;
	else
		return -1;                                    /* "->" waiters, FLOCK, LEASE... */
	if (!(p = word(p, &w, &n)) || !(p = word(p, &w, &n))) /* ADVISORY, WRITE */
		return -1;
	if (!(p = lock_num(p, 10, &neg, &v)))
		return -1;
	h->pid = neg ? -(int)v : (int)v;
	/* MAJ:MIN:INO, the first two in hex. */
	if (!(p = lock_num(p, 16, NULL, &v)) || *p != ':')
		return -1;
	h->maj = (unsigned)v;
	if (!(p = lock_num(p + 1, 16, NULL, &v)) || *p != ':')
		return -1;
	h->min = (unsigned)v;
	if (!(p = lock_num(p + 1, 10, NULL, &v)))
		return -1;
	h->ino = v;
	if (!(p = lock_num(p, 10, &neg, &v)))
		return -1;
	h->start = neg ? -(long long)v : (long long)v;
	return 0;
}

void vr_proc_locks_read(const char *root, struct vr_proc_locks *t)
{
	memset(t, 0, sizeof(*t));
	t->read = 1;
	char path[320];
	snprintf(path, sizeof(path), "%s/locks", root_or_default(root));
	size_t len;
	char *buf = vr_read_all(path, &len);
	if (!buf)
		return;
	int ecap = 0;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "N: POSIX  ADVISORY  WRITE PID MAJ:MIN:INO START END"; lines
		 * with "->" are waiters, not holders, and are skipped. */
		struct vr_proc_lock h;
		if (parse_lock_line(line, &h) == 0) {
			if (t->n == ecap) {
				ecap = ecap ? ecap * 2 : 256;
				struct vr_proc_lock *ne = realloc(t->e, (size_t)ecap * sizeof(*ne));
				if (!ne)
					break;
				t->e = ne;
			}
			t->e[t->n++] = h;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	t->ok = 1;
}
