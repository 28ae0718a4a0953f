/*
 * libexec.c - finding vramctl's own files, and exec'ing the commands that
 * live in their own executables (libexec.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/libexec.h"
#include "common/exit.h"

int vr_self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	/* A libexec program answers for the vramctl that runs it, so that it
	 * finds the library and the other helpers the same way: $(O)/libexec
	 * -> $(O), PREFIX/libexec/vramctl -> PREFIX/bin. */
	size_t l = strlen(buf);
	static const char inst[] = "/libexec/vramctl", tree[] = "/libexec";
	if (l >= sizeof inst - 1 && !strcmp(buf + l - (sizeof inst - 1), inst)) {
		if (l - (sizeof inst - 1) + sizeof "/bin" > len)
			return -1;
		strcpy(buf + l - (sizeof inst - 1), "/bin");
	} else if (l >= sizeof tree - 1 && !strcmp(buf + l - (sizeof tree - 1), tree)) {
		buf[l - (sizeof tree - 1)] = '\0';
	}
	return 0;
}

int vr_found(const char *dir, const char *rel, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", dir, rel);

	return n > 0 && (size_t)n < len && access(out, F_OK) == 0;
}

int vr_libexec_find(const char *dir, const char *name, char *out, size_t len)
{
	char rel[PATH_MAX];
	snprintf(rel, sizeof(rel), "libexec/%s", name);
	if (vr_found(dir, rel, out, len))
		return 1;
	snprintf(rel, sizeof(rel), "../libexec/vramctl/%s", name);
	return vr_found(dir, rel, out, len);
}

int cli_find_helper(const char *name, char *out, size_t len)
{
	char dir[PATH_MAX];
	if (vr_self_dir(dir, sizeof(dir)) < 0)
		return -1;
	return vr_libexec_find(dir, name, out, len) ? 0 : -1;
}

int vr_exec_helper(const char *cmd, char **argv)
{
	char dir[PATH_MAX], name[64], path[PATH_MAX + 96];
	snprintf(name, sizeof(name), "vramctl-%s", cmd);
	if (vr_self_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr, "vramctl: %s: cannot find its own path\n", cmd);
		return VR_EXIT_ERROR;
	}
	if (!vr_libexec_find(dir, name, path, sizeof(path))) {
		fprintf(stderr,
		        "vramctl: %s: cannot find %s (looked in %s/libexec and "
		        "%s/../libexec/vramctl); build it with 'make'\n",
		        cmd, name, dir, dir);
		return VR_EXIT_ERROR;
	}
	execv(path, argv);
	fprintf(stderr, "vramctl: %s: cannot run %s: %s\n", cmd, path, strerror(errno));
	return VR_EXIT_ERROR;
}
