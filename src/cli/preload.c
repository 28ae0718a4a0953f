/*
 * preload.c - `vramctl preload enable|disable|status`: the machine's
 * /etc/ld.so.preload entry for the installed library (root).
 *
 * With the entry, ld.so loads the library into every dynamically linked
 * program, whatever its environment (setuid ones included): a process of a
 * capped job that loses LD_PRELOAD or VRAMCTL_LIMIT (env -i, sudo, ssh,
 * srun --export=NONE) finds its job at its first driver call
 * (hook/job.h), and the site's max_limit and user_limit reach every
 * program that uses the driver. A program that never calls the driver only
 * loads the library (docs/figures.md has the cost).
 *
 * The file is edited atomically: written whole under a temporary name in
 * /etc, synced, renamed over the old one; every other entry is kept as it
 * was. A library that root does not own, or that another user could
 * replace (it or a directory above it writable by group or others), is
 * refused: every program on the machine, root's included, would load it.
 * The packages never enable the entry by themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/paths.h"
#include "common/exit.h"
#include "registry/jobs.h"

#define PRELOAD_FILE "/etc/ld.so.preload"
#define PRELOAD_MAX  65536

static void preload_usage(FILE *f)
{
	fprintf(f, "usage: vramctl preload enable|disable|status [--library PATH]\n"
	           "\n"
	           "The machine's /etc/ld.so.preload entry for vramctl's library (root):\n"
	           "with it, every program that uses the GPU driver loads the library\n"
	           "whatever its environment, so a process of a capped job that clears\n"
	           "LD_PRELOAD or VRAMCTL_LIMIT (env -i, sudo, ssh) stays capped, and\n"
	           "vramctl.conf's max_limit and user_limit reach every program.\n"
	           "\n"
	           "  enable            add the entry (other entries are kept)\n"
	           "  disable           remove it\n"
	           "  status            say whether it is there (exit 0 yes, 1 no)\n"
	           "  --library PATH    the library to name (default: vramctl's own)\n"
	           "  -h, --help        this help\n"
	           "\n"
	           "Exit status: 0, 1 (status: not enabled), 125 vramctl's error.\n");
}

/* Refuses a library another user could change: it and every directory
 * above it must be root's and writable by root alone. 0, or -1 after a
 * message. */
static int root_owned(const char *lib)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", lib);
	for (;;) {
		struct stat st;
		if (lstat(path, &st) != 0) {
			fprintf(stderr, "vramctl: preload: %s: %s\n", path, strerror(errno));
			return -1;
		}
		/* A sticky directory (/tmp) lets nobody replace root's entries. */
		int writable = (st.st_mode & (S_IWGRP | S_IWOTH)) &&
		               !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX));
		if (st.st_uid != 0 || writable) {
			fprintf(
			    stderr,
			    "vramctl: preload: %s is %s: every program on this machine would load "
			    "the library, so it and the directories above it must be root's and "
			    "writable by root alone (install vramctl, or give --library a copy "
			    "in such a place)\n",
			    path,
			    st.st_uid != 0 ? "not owned by root" : "writable by group or others");
			return -1;
		}
		char *slash = strrchr(path, '/');
		if (!slash || slash == path)
			return 0;
		*slash = '\0';
	}
}

/* The file's text into buf (len bytes); "" when there is none. 0 or -1. */
static int read_preload(char *buf, size_t len, struct stat *st)
{
	int fd = open(PRELOAD_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	buf[0] = '\0';
	if (fd < 0) {
		if (errno == ENOENT) {
			st->st_mode = 0644;
			return 0;
		}
		fprintf(stderr, "vramctl: preload: cannot read %s: %s\n", PRELOAD_FILE,
		        strerror(errno));
		return -1;
	}
	ssize_t n = fstat(fd, st) == 0 && (size_t)st->st_size < len ? read(fd, buf, len - 1) : -1;
	close(fd);
	if (n < 0) {
		fprintf(stderr, "vramctl: preload: %s cannot be read whole\n", PRELOAD_FILE);
		return -1;
	}
	buf[n] = '\0';
	return 0;
}

/* ld.so separates entries with white space and ':'. */
static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ':';
}

/* Is an entry of text the library (its path, or its name: any
 * libvramctl.so, an older install's)? With exact, only its path. */
static int names_lib(const char *e, size_t n, const char *lib, int exact)
{
	size_t ll = strlen(lib);
	if (n == ll && !strncmp(e, lib, n))
		return 1;
	static const char base[] = "/libvramctl.so";
	return !exact && n >= sizeof base - 1 &&
	       !strncmp(e + n - (sizeof base - 1), base, sizeof base - 1);
}

/* Whether text has an entry for lib (exact: its path). */
static int has_lib(const char *text, const char *lib, int exact)
{
	for (const char *p = text; *p;) {
		size_t n = 0;
		while (is_sep(*p))
			p++;
		while (p[n] && !is_sep(p[n]))
			n++;
		if (n && names_lib(p, n, lib, exact))
			return 1;
		p += n;
	}
	return 0;
}

/* text without the lines that name a vramctl library, into out. */
static void drop_lib(const char *text, const char *lib, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t ln = nl ? (size_t)(nl - p) + 1 : strlen(p);
		char line[PATH_MAX + 64];
		snprintf(line, sizeof line, "%.*s", (int)(ln < sizeof line ? ln : sizeof line - 1),
		         p);
		if (!has_lib(line, lib, 0) && o + ln < len) {
			memcpy(out + o, p, ln);
			o += ln;
		}
		p += ln;
	}
	out[o] = '\0';
}

/* Writes text as the new file, atomically (a temporary name in /etc,
 * synced, renamed over it); an empty text removes the file. 0 or -1. */
static int write_preload(const char *text, mode_t mode)
{
	if (!text[0]) {
		if (unlink(PRELOAD_FILE) != 0 && errno != ENOENT) {
			fprintf(stderr, "vramctl: preload: cannot remove %s: %s\n", PRELOAD_FILE,
			        strerror(errno));
			return -1;
		}
		return 0;
	}
	char tmp[] = "/etc/.ld.so.preload.vramctl.XXXXXX";
	int fd = mkstemp(tmp);
	size_t len = strlen(text);
	if (fd < 0 || fchmod(fd, mode & 0644) != 0 || write(fd, text, len) != (ssize_t)len ||
	    fsync(fd) != 0 || close(fd) != 0 || rename(tmp, PRELOAD_FILE) != 0) {
		int e = errno;
		if (fd >= 0)
			unlink(tmp);
		fprintf(stderr, "vramctl: preload: cannot write %s: %s\n", PRELOAD_FILE,
		        strerror(e));
		return -1;
	}
	return 0;
}

static int status(const char *lib)
{
	char text[PRELOAD_MAX], err[256];
	struct stat st;
	if (read_preload(text, sizeof text, &st) != 0)
		return VR_EXIT_ERROR;
	int on = has_lib(text, lib, 1), other = !on && has_lib(text, lib, 0);
	printf("%s: %s\n", PRELOAD_FILE,
	       on      ? "enabled: every program that uses the GPU driver loads the library"
	       : other ? "another vramctl library is named (not this vramctl's)"
	               : "not enabled: the cap follows a process's environment");
	printf("library: %s\n", lib);
	printf("jobs directory: %s: %s\n", vr_jobs_dir(NULL),
	       vr_jobs_check(NULL, err, sizeof err) == 0 ? "fit" : err);
	return on ? 0 : 1;
}

int cmd_preload(int argc, char **argv)
{
	char lib[PATH_MAX], err[2 * PATH_MAX + 128], text[PRELOAD_MAX], out[PRELOAD_MAX + PATH_MAX];
	const char *verb = NULL, *given = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			preload_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--library") && i + 1 < argc) {
			given = argv[++i];
		} else if (!strncmp(argv[i], "--library=", 10)) {
			given = argv[i] + 10;
		} else if (!verb && argv[i][0] != '-') {
			verb = argv[i];
		} else {
			fprintf(stderr,
			        "vramctl: preload: unexpected '%s' ('vramctl preload --help')\n",
			        argv[i]);
			return VR_EXIT_ERROR;
		}
	}
	if (!verb ||
	    (strcmp(verb, "enable") && strcmp(verb, "disable") && strcmp(verb, "status"))) {
		preload_usage(stderr);
		return VR_EXIT_ERROR;
	}
	if (given && !realpath(given, lib)) {
		fprintf(stderr, "vramctl: preload: %s: %s\n", given, strerror(errno));
		return VR_EXIT_ERROR;
	}
	if (!given && cli_find_library(lib, sizeof lib, err, sizeof err) < 0) {
		fprintf(stderr, "vramctl: preload: %s\n", err);
		return VR_EXIT_ERROR;
	}
	if (strpbrk(lib, " \t\n:")) {
		fprintf(stderr,
		        "vramctl: preload: %s cannot be an entry of %s (it holds a space or "
		        "':')\n",
		        lib, PRELOAD_FILE);
		return VR_EXIT_ERROR;
	}
	if (!strcmp(verb, "status"))
		return status(lib);
	if (geteuid() != 0) {
		fprintf(stderr, "vramctl: preload %s: only root may change %s\n", verb,
		        PRELOAD_FILE);
		return VR_EXIT_ERROR;
	}
	struct stat st;
	if (read_preload(text, sizeof text, &st) != 0)
		return VR_EXIT_ERROR;
	if (!strcmp(verb, "disable")) {
		if (!has_lib(text, lib, 0)) {
			printf("%s names no vramctl library: nothing to do\n", PRELOAD_FILE);
			return 0;
		}
		drop_lib(text, lib, out, sizeof out);
		if (write_preload(out, st.st_mode) != 0)
			return VR_EXIT_ERROR;
		printf("removed from %s: programs started from now on do not load the library "
		       "unless their environment asks for it\n",
		       PRELOAD_FILE);
		return 0;
	}
	if (root_owned(lib) != 0)
		return VR_EXIT_ERROR;
	if (vr_jobs_prepare(NULL, err, sizeof err) != 0)
		fprintf(stderr, "vramctl: preload: %s (jobs cannot be recorded there)\n", err);
	if (has_lib(text, lib, 1)) {
		printf("%s already names %s\n", PRELOAD_FILE, lib);
		return 0;
	}
	/* Another vramctl library named: replaced, never loaded twice. */
	drop_lib(text, lib, out, sizeof out);
	size_t o = strlen(out);
	snprintf(out + o, sizeof out - o, "%s%s\n", o && out[o - 1] != '\n' ? "\n" : "", lib);
	if (write_preload(out, st.st_mode) != 0)
		return VR_EXIT_ERROR;
	printf("added to %s: %s (programs started from now on load it)\n", PRELOAD_FILE, lib);
	return 0;
}
