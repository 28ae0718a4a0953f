/*
 * kernel_spec.c - Jupyter's kernelspecs for `vramctl kernel` (kernel_spec.h):
 * where they live, finding them, reading vramctl's metadata in one.
 *
 * Kernelspecs are looked up as Jupyter does (jupyter_core.paths):
 * $JUPYTER_PATH entries, the user's data directory ($JUPYTER_DATA_DIR, else
 * $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter), the environment's
 * ($VIRTUAL_ENV or $CONDA_PREFIX)/share/jupyter, /usr/local/share/jupyter,
 * /usr/share/jupyter; each with kernels/NAME/kernel.json.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/kernel_spec.h"
#include "common/contract.h"
#include "common/json_read.h"

#define MAX_DIRS 16

/* ---- where kernelspecs live ------------------------------------------- */

/* snprintf for paths: 0, or -1 when the path did not fit. */
int cli_kspec_fmt_path(char *buf, size_t len, const char *fmt, ...) VR_PRINTF(3, 4);
int cli_kspec_fmt_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

static int sys_prefix(char *buf, size_t len)
{
	const char *e = getenv("VIRTUAL_ENV");
	FILE *p;

	if (!e || !*e)
		e = getenv("CONDA_PREFIX");
	if (e && *e) {
		snprintf(buf, len, "%s", e);
		return 0;
	}
	/* As `jupyter kernelspec install --sys-prefix` run by this python3. */
	p = popen("python3 -c 'import sys; print(sys.prefix)' 2>/dev/null", "r");
	if (!p)
		return -1;
	if (!fgets(buf, (int)len, p)) {
		pclose(p);
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return pclose(p) == 0 && buf[0] == '/' ? 0 : -1;
}

static int user_dir(char *buf, size_t len)
{
	const char *e = getenv("JUPYTER_DATA_DIR");

	if (e && *e)
		return snprintf(buf, len, "%s/kernels", e) < (int)len ? 0 : -1;
	e = getenv("XDG_DATA_HOME");
	if (e && *e)
		return snprintf(buf, len, "%s/jupyter/kernels", e) < (int)len ? 0 : -1;
	e = getenv("HOME");
	if (!e || !*e)
		return -1;
	return snprintf(buf, len, "%s/.local/share/jupyter/kernels", e) < (int)len ? 0 : -1;
}

/* The kernels directories Jupyter searches, in its order. Returns the count. */
static int search_dirs(char dirs[MAX_DIRS][PATH_MAX])
{
	const char *jp = getenv("JUPYTER_PATH"), *env;
	int n = 0;

	if (jp && *jp) {
		char copy[4096], *t, *save = NULL;

		snprintf(copy, sizeof copy, "%s", jp);
		for (t = strtok_r(copy, ":", &save); t && n < MAX_DIRS - 4;
		     t = strtok_r(NULL, ":", &save))
			snprintf(dirs[n++], PATH_MAX, "%s/kernels", t);
	}
	if (user_dir(dirs[n], PATH_MAX) == 0)
		n++;
	env = getenv("VIRTUAL_ENV");
	if (!env || !*env)
		env = getenv("CONDA_PREFIX");
	if (env && *env)
		snprintf(dirs[n++], PATH_MAX, "%s/share/jupyter/kernels", env);
	snprintf(dirs[n++], PATH_MAX, "/usr/local/share/jupyter/kernels");
	snprintf(dirs[n++], PATH_MAX, "/usr/share/jupyter/kernels");
	return n;
}

/* The kernels directory for an install or a remove at `where`. */
int cli_kspec_target_dir(enum where w, char *buf, size_t len)
{
	char prefix[PATH_MAX];

	switch (w) {
	case W_SYS_PREFIX:
		if (sys_prefix(prefix, sizeof prefix) < 0) {
			fprintf(stderr, "vramctl: kernel: --sys-prefix: cannot find sys.prefix "
			                "(no $VIRTUAL_ENV, $CONDA_PREFIX or python3)\n");
			return -1;
		}
		return cli_kspec_fmt_path(buf, len, "%s/share/jupyter/kernels", prefix);
	case W_SYSTEM:
		snprintf(buf, len, "/usr/local/share/jupyter/kernels");
		return 0;
	default:
		if (user_dir(buf, len) < 0) {
			fprintf(stderr, "vramctl: kernel: no $HOME or $JUPYTER_DATA_DIR\n");
			return -1;
		}
		return 0;
	}
}

int cli_kspec_read_file(const char *path, char *buf, size_t len, size_t *got)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	*got = 0;
	if (fd < 0)
		return -1;
	while (*got + 1 < len && (n = read(fd, buf + *got, len - 1 - *got)) > 0)
		*got += (size_t)n;
	close(fd);
	buf[*got] = '\0';
	return *got + 1 < len ? 0 : -1;
}

/* ---- finding kernelspecs ----------------------------------------------- */

/* Kernel names follow the group-name rule (1 to 64 of A-Z a-z 0-9 . _ -,
 * no leading '.'): safe as a directory name and as a group name. */
int cli_kspec_valid_name(const char *n)
{
	return vr_group_name_check(n, NULL, 0) == 0;
}

/* The first kernel.json of name in Jupyter's order; 0 with its folder. */
int cli_kspec_find(const char *name, char *dir, size_t len)
{
	char dirs[MAX_DIRS][PATH_MAX], json[PATH_MAX + 96];
	int n = search_dirs(dirs);

	for (int i = 0; i < n; i++) {
		if (cli_kspec_fmt_path(json, sizeof json, "%s/%s/kernel.json", dirs[i], name) ==
		        0 &&
		    access(json, R_OK) == 0)
			return cli_kspec_fmt_path(dir, len, "%s/%s", dirs[i], name);
	}
	return -1;
}

/* Calls fn for every kernelspec found, the first of each name only. */
void cli_kspec_each(void (*fn)(const char *name, const char *dir, void *ctx), void *ctx)
{
	char dirs[MAX_DIRS][PATH_MAX], seen[256][72], path[PATH_MAX + 96];
	int n = search_dirs(dirs), nseen = 0;

	for (int i = 0; i < n; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		if (!d)
			continue;
		while ((e = readdir(d))) {
			int dup = 0;

			if (!cli_kspec_valid_name(e->d_name))
				continue;
			if (cli_kspec_fmt_path(path, sizeof path, "%s/%s/kernel.json", dirs[i],
			                       e->d_name) < 0 ||
			    access(path, R_OK) != 0)
				continue;
			for (int k = 0; k < nseen; k++)
				dup |= !strcmp(seen[k], e->d_name);
			if (dup || nseen == 256)
				continue;
			if (cli_kspec_fmt_path(seen[nseen], sizeof seen[0], "%s", e->d_name) == 0)
				nseen++;
			if (cli_kspec_fmt_path(path, sizeof path, "%s/%s", dirs[i], e->d_name) == 0)
				fn(e->d_name, path, ctx);
		}
		closedir(d);
	}
}

struct names {
	void (*emit)(const char *name);
};

static void name_only(const char *name, const char *dir, void *ctx)
{
	(void)dir;
	((struct names *)ctx)->emit(name);
}

void cli_kernel_names(void (*emit)(const char *name))
{
	struct names n = {emit};

	cli_kspec_each(name_only, &n);
}

/* Our metadata, {"limit":..., "group":..., "from":...}, or -1 if not ours. */
int cli_kspec_meta(const char *dir, char *limit, char *group, char *from, size_t len)
{
	static char buf[KERNEL_JSON_MAX];
	char path[PATH_MAX + 16];
	struct vr_json_span meta, v, f;
	size_t got;

	snprintf(path, sizeof path, "%s/kernel.json", dir);
	if (cli_kspec_read_file(path, buf, sizeof buf, &got) < 0 ||
	    vr_json_get(buf, got, "metadata", &meta) < 0 ||
	    vr_json_get(meta.p, meta.n, "vramctl", &v) < 0)
		return -1;
	limit[0] = group[0] = from[0] = '\0';
	if (vr_json_get(v.p, v.n, "limit", &f) == 0)
		vr_json_text(&f, limit, len);
	if (vr_json_get(v.p, v.n, "group", &f) == 0)
		vr_json_text(&f, group, len);
	if (vr_json_get(v.p, v.n, "from", &f) == 0)
		vr_json_text(&f, from, len);
	return 0;
}

int cli_kspec_program(const char *dir, char *prog, size_t len)
{
	static char buf[KERNEL_JSON_MAX];
	char path[PATH_MAX + 16];
	struct vr_json_span argv, first;
	const char *p, *end;
	size_t got;

	snprintf(path, sizeof path, "%s/kernel.json", dir);
	if (cli_kspec_read_file(path, buf, sizeof buf, &got) < 0 ||
	    vr_json_get(buf, got, "argv", &argv) < 0 || argv.p[0] != '[')
		return -1;
	end = argv.p + argv.n;
	p = vr_json_skip_ws(argv.p + 1, end);
	if (p >= end || *p != '"')
		return -1;
	first.p = p;
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\' && p + 1 < end)
			p++;
	if (p >= end)
		return -1;
	first.n = (size_t)(p + 1 - first.p);
	vr_json_text(&first, prog, len);
	return prog[0] ? 0 : -1;
}
