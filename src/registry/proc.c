/*
 * proc.c - the one /proc layer (see proc.h).
 */
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

int vr_proc_start_time(const char *root, pid_t pid, uint64_t *out)
{
	char buf[1024];
	if (pid < 0 || vr_proc_read(root, pid, "stat", buf, sizeof(buf)) <= 0)
		return -ENOENT;
	/* The command (field 2) may hold spaces and parentheses: count fields
	 * from the last ')'. */
	const char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 2; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	*out = strtoull(p, NULL, 10);
	return 0;
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
		out->uid = (uid_t)strtoul(l + 5, NULL, 10);
		out->have |= VR_PROC_UID;
	}
	return 0;
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
