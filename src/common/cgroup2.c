/*
 * cgroup2.c - a process's cgroup v2 path and NVML's name for it
 * (cgroup2.h).
 */
#include "common/cgroup2.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *vr_cgroup2_root(void)
{
	const char *r = secure_getenv(VR_ENV_CGROUP_ROOT);
	return r && r[0] == '/' ? r : VR_CGROUP2_MOUNT;
}

/* Has dir a cgroup v2 hierarchy's root file? */
static int is_v2(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/cgroup.controllers", dir);
	return access(p, F_OK) == 0;
}

const char *vr_cgroup2_hierarchy(void)
{
	const char *r = secure_getenv(VR_ENV_CGROUP_ROOT);
	if (r && r[0] == '/')
		return r;
	if (is_v2(VR_CGROUP2_MOUNT))
		return VR_CGROUP2_MOUNT;
	return is_v2(VR_CGROUP2_MOUNT "/unified") ? VR_CGROUP2_MOUNT "/unified" : NULL;
}

int vr_cgroup2_parse(const char *text, char *out, size_t n)
{
	if (n)
		out[0] = '\0';
	/* cgroup v2: "0::/path"; v1 hierarchies have a number and names. */
	const char *p = strncmp(text, "0::", 3) == 0 ? text : strstr(text, "\n0::");
	if (!p || n == 0)
		return -1;
	p += p[0] == '\n' ? 4 : 3;
	size_t len = strcspn(p, "\n");
	if (len == 0 || p[0] != '/' || len >= n)
		return -1;
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

int vr_cgroup2_read(const char *proc_root, pid_t pid, char *out, size_t n)
{
	char path[PATH_MAX], text[4096];
	const char *proc = proc_root ? proc_root : "/proc";
	if (n)
		out[0] = '\0';
	if (pid)
		snprintf(path, sizeof(path), "%s/%d/cgroup", proc, (int)pid);
	else
		snprintf(path, sizeof(path), "%s/self/cgroup", proc);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	text[got] = '\0';
	return vr_cgroup2_parse(text, out, n);
}

int vr_cgroup2_ns(const char *path, char *out, size_t n)
{
	int k = snprintf(out, n, "%s%s", VR_CGROUP2_MOUNT, strcmp(path, "/") ? path : "");
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

int vr_cgroup2_mounted(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/cgroup.controllers", vr_cgroup2_root());
	return access(path, R_OK) == 0;
}

int vr_cgroup2_move(const char *dir, pid_t pid)
{
	char path[PATH_MAX], text[24];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	int len = snprintf(text, sizeof(text), "%d\n", (int)pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = write(fd, text, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return rc;
}

int vr_cgroup2_populated(const char *dir)
{
	char path[PATH_MAX], c;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, &c, 1);
	close(fd);
	return n > 0;
}

int vr_cgroup2_walk(const char *path, int (*visit)(const char *ns, void *ctx), void *ctx)
{
	char cur[VR_CGROUP2_LEN], ns[VR_CGROUP2_LEN + 32];
	if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur) || cur[0] != '/')
		return 0;
	for (;;) {
		if (vr_cgroup2_ns(cur, ns, sizeof(ns)) != 0)
			return 0;
		int rc = visit(ns, ctx);
		if (rc)
			return rc;
		char *slash = strrchr(cur, '/');
		if (!strcmp(cur, "/"))
			return 0;
		if (slash == cur)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}
