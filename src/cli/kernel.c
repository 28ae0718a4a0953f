/*
 * kernel.c - `vramctl kernel install|list|remove`: Jupyter kernels that run
 * under a cap.
 *
 * `install` reads an existing kernelspec (--from, default python3) and
 * writes a new one beside the user's kernels whose argv is the original
 * argv behind `vramctl run --exec --limit SPEC --group GROUP --`. --exec
 * makes vramctl set the contract and exec the real kernel in its place, so
 * the process Jupyter started, signals and kills is the kernel itself
 * (interrupts and restarts work as without vramctl); every notebook on the
 * kernel joins the one named group, so they share one cap. The wrapped
 * kernelspec is only read. Its "env" is copied as it is: Jupyter does not
 * expand "${VAR}" there, so nothing of vramctl's goes into it.
 *
 * Kernelspecs are looked up as Jupyter does (jupyter_core.paths):
 * $JUPYTER_PATH entries, the user's data directory ($JUPYTER_DATA_DIR, else
 * $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter), the environment's
 * ($VIRTUAL_ENV or $CONDA_PREFIX)/share/jupyter, /usr/local/share/jupyter,
 * /usr/share/jupyter; each with kernels/NAME/kernel.json.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/compiler.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/contract.h"

#define KERNEL_JSON_MAX 65536
#define MAX_DIRS        16

static void kernel_usage(FILE *f)
{
	fprintf(f, "usage: vramctl kernel install|list|remove [ARG...]\n"
	           "\n"
	           "Jupyter kernels that run under a GPU memory cap: every notebook on such a\n"
	           "kernel shares one cap (one group). See vramctl-kernel(1).\n"
	           "\n"
	           "commands:\n"
	           "  install    write a kernelspec wrapping an existing kernel\n"
	           "  list       list the kernels vramctl installed\n"
	           "  remove     remove a kernel vramctl installed\n");
}

static void install_usage(FILE *f)
{
	fprintf(f, "usage: vramctl kernel install --limit SPEC [--group GROUP] [--name NAME]\n"
	           "                              [--display-name TEXT] [--from KERNEL]\n"
	           "                              [--user|--sys-prefix|--system]\n"
	           "\n"
	           "Writes a kernelspec that starts KERNEL (default python3) under\n"
	           "'vramctl run --exec --limit SPEC --group GROUP'.\n"
	           "\n"
	           "  -l, --limit SPEC      the cap, as for vramctl run (e.g. 8G, 0=8G,1=50%%)\n"
	           "  --group GROUP         the group every notebook on it joins\n"
	           "                        (default: jupyter-NAME)\n"
	           "  --name NAME           the kernel's name (default: KERNEL-gpu-SPEC)\n"
	           "  --display-name TEXT   what Jupyter shows (default: the wrapped kernel's\n"
	           "                        name and the cap)\n"
	           "  --from KERNEL         the kernelspec to wrap (default python3)\n"
	           "  --user                for this user (default)\n"
	           "  --sys-prefix          for the Python environment (sys.prefix)\n"
	           "  --system              for every user (/usr/local/share/jupyter)\n");
}

static void remove_usage(FILE *f)
{
	fprintf(f, "usage: vramctl kernel remove KERNEL [--user|--sys-prefix|--system]\n"
	           "\n"
	           "Removes a kernelspec that vramctl installed (never another one). Without\n"
	           "--user, --sys-prefix or --system: the first one Jupyter would find.\n");
}

static void list_usage(FILE *f)
{
	fprintf(f, "usage: vramctl kernel list\n"
	           "\n"
	           "Lists the kernelspecs vramctl installed, as Jupyter finds them: name, cap,\n"
	           "group, the kernel they wrap and where they are.\n");
}

/* ---- where kernelspecs live ------------------------------------------- */

enum where { W_ANY, W_USER, W_SYS_PREFIX, W_SYSTEM };

/* snprintf for paths: 0, or -1 when the path did not fit. */
static int fmt_path(char *buf, size_t len, const char *fmt, ...) VR_PRINTF(3, 4);
static int fmt_path(char *buf, size_t len, const char *fmt, ...)
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
static int target_dir(enum where w, char *buf, size_t len)
{
	char prefix[PATH_MAX];

	switch (w) {
	case W_SYS_PREFIX:
		if (sys_prefix(prefix, sizeof prefix) < 0) {
			fprintf(stderr, "vramctl: kernel: --sys-prefix: cannot find sys.prefix "
			                "(no $VIRTUAL_ENV, $CONDA_PREFIX or python3)\n");
			return -1;
		}
		return fmt_path(buf, len, "%s/share/jupyter/kernels", prefix);
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

/* ---- just enough JSON -------------------------------------------------- */

/*
 * Values are handled as raw JSON text: the wrapped kernel's argv elements,
 * env and the rest are copied as they are written, never decoded, so
 * nothing can be lost or re-escaped wrongly. skip_value returns the end of
 * the value starting at p (after blanks), or NULL when it is malformed.
 */
static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	p = skip_ws(p, end);
	if (p >= end)
		return NULL;
	do {
		if (p >= end)
			return NULL;
		if (*p == '"') {
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				return NULL;
			p++;
		} else if (*p == '{' || *p == '[') {
			depth++;
			p++;
		} else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return NULL;
			p++;
		} else if (depth == 0) {
			while (p < end && !strchr(",}] \t\r\n", *p))
				p++;
		} else {
			p++;
		}
	} while (depth > 0);
	return p;
}

struct span {
	const char *p;
	size_t n;
};

/* The raw value of key in the object text[0..len). 0, or -1 if absent. */
static int json_get(const char *text, size_t len, const char *key, struct span *out)
{
	const char *p = skip_ws(text, text + len), *end = text + len;
	size_t kl = strlen(key);

	if (p >= end || *p != '{')
		return -1;
	p++;
	for (;;) {
		const char *k, *v;
		size_t klen;

		p = skip_ws(p, end);
		if (p >= end || *p != '"')
			return -1;
		k = p + 1;
		p = skip_value(p, end);
		if (!p)
			return -1;
		klen = (size_t)(p - k) - 1;
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return -1;
		v = skip_ws(p + 1, end);
		p = skip_value(v, end);
		if (!p)
			return -1;
		if (klen == kl && !strncmp(k, key, kl)) {
			out->p = v;
			out->n = (size_t)(p - v);
			return 0;
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		return -1;
	}
}

/* A JSON string value as plain text (escapes other than \" and \\ kept). */
static void json_text(const struct span *s, char *buf, size_t len)
{
	size_t o = 0;

	if (len == 0)
		return;
	if (s->n >= 2 && s->p[0] == '"') {
		for (size_t i = 1; i + 1 < s->n && o + 1 < len; i++) {
			if (s->p[i] == '\\' && i + 2 < s->n && strchr("\"\\/", s->p[i + 1]))
				i++;
			buf[o++] = s->p[i];
		}
	}
	buf[o] = '\0';
}

static void json_puts(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static int read_file(const char *path, char *buf, size_t len, size_t *got)
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
static int valid_name(const char *n)
{
	return vr_group_name_check(n, NULL, 0) == 0;
}

/* The first kernel.json of name in Jupyter's order; 0 with its folder. */
static int find_spec(const char *name, char *dir, size_t len)
{
	char dirs[MAX_DIRS][PATH_MAX], json[PATH_MAX + 96];
	int n = search_dirs(dirs);

	for (int i = 0; i < n; i++) {
		if (fmt_path(json, sizeof json, "%s/%s/kernel.json", dirs[i], name) == 0 &&
		    access(json, R_OK) == 0)
			return fmt_path(dir, len, "%s/%s", dirs[i], name);
	}
	return -1;
}

/* Calls fn for every kernelspec found, the first of each name only. */
static void each_spec(void (*fn)(const char *name, const char *dir, void *ctx), void *ctx)
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

			if (!valid_name(e->d_name))
				continue;
			if (fmt_path(path, sizeof path, "%s/%s/kernel.json", dirs[i], e->d_name) <
			        0 ||
			    access(path, R_OK) != 0)
				continue;
			for (int k = 0; k < nseen; k++)
				dup |= !strcmp(seen[k], e->d_name);
			if (dup || nseen == 256)
				continue;
			if (fmt_path(seen[nseen], sizeof seen[0], "%s", e->d_name) == 0)
				nseen++;
			if (fmt_path(path, sizeof path, "%s/%s", dirs[i], e->d_name) == 0)
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

	each_spec(name_only, &n);
}

/* Our metadata, {"limit":..., "group":..., "from":...}, or -1 if not ours. */
static int our_meta(const char *dir, char *limit, char *group, char *from, size_t len)
{
	static char buf[KERNEL_JSON_MAX];
	char path[PATH_MAX + 16];
	struct span meta, v, f;
	size_t got;

	snprintf(path, sizeof path, "%s/kernel.json", dir);
	if (read_file(path, buf, sizeof buf, &got) < 0 ||
	    json_get(buf, got, "metadata", &meta) < 0 ||
	    json_get(meta.p, meta.n, "vramctl", &v) < 0)
		return -1;
	limit[0] = group[0] = from[0] = '\0';
	if (json_get(v.p, v.n, "limit", &f) == 0)
		json_text(&f, limit, len);
	if (json_get(v.p, v.n, "group", &f) == 0)
		json_text(&f, group, len);
	if (json_get(v.p, v.n, "from", &f) == 0)
		json_text(&f, from, len);
	return 0;
}

/* ---- install ------------------------------------------------------------ */

struct install {
	const char *limit, *group, *name, *display, *from;
	enum where where;
};

/* The wrapped kernel's kernel.json text; python3 falls back to ipykernel's
 * own spec (what Jupyter offers when no file exists). */
static int load_wrapped(const char *from, char *buf, size_t len, size_t *got)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], py[PATH_MAX];
	FILE *p;

	if (find_spec(from, dir, sizeof dir) == 0) {
		snprintf(path, sizeof path, "%s/kernel.json", dir);
		if (read_file(path, buf, len, got) < 0) {
			fprintf(stderr, "vramctl: kernel: cannot read %s\n", path);
			return -1;
		}
		return 0;
	}
	if (strcmp(from, "python3") != 0)
		goto none;
	p = popen("python3 -c 'import sys, ipykernel; print(sys.executable)' 2>/dev/null", "r");
	if (!p || !fgets(py, sizeof py, p)) {
		if (p)
			pclose(p);
		goto none;
	}
	if (pclose(p) != 0)
		goto none;
	py[strcspn(py, "\n")] = '\0';
	{
		FILE *m = fmemopen(buf, len, "w");

		if (!m)
			return -1;
		fputs("{\"argv\": [", m);
		json_puts(m, py);
		fputs(", \"-m\", \"ipykernel_launcher\", \"-f\", \"{connection_file}\"], "
		      "\"display_name\": \"Python 3 (ipykernel)\", \"language\": \"python\"}",
		      m);
		fclose(m);
		*got = strlen(buf);
	}
	return 0;
none:
	fprintf(stderr,
	        "vramctl: kernel: no kernelspec '%s' (see 'jupyter kernelspec list'; --from "
	        "names one)\n",
	        from);
	return -1;
}

static int self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	if (fmt_path(tmp, sizeof tmp, "%s", path) < 0)
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int do_install(const struct install *in)
{
	static char src[KERNEL_JSON_MAX];
	char name[80], group[VR_GROUP_NAME_MAX + 1], display[512], base[256], cap[96],
	    self[PATH_MAX];
	char dir[PATH_MAX], kdir[PATH_MAX + 80], path[PATH_MAX + 96], tmp[PATH_MAX + 96];
	struct vr_limits lim;
	struct span argv, f;
	const char *keys[] = {"language", "interrupt_mode", "env"};
	size_t got;
	FILE *out;
	int fd;

	if (vr_parse_limits(in->limit, &lim, cap, sizeof cap) < 0) {
		fprintf(stderr, "vramctl: kernel install: --limit '%s': %s\n", in->limit, cap);
		return VR_EXIT_ERROR;
	}
	if (load_wrapped(in->from, src, sizeof src, &got) < 0)
		return VR_EXIT_ERROR;
	if (json_get(src, got, "argv", &argv) < 0 || argv.p[0] != '[') {
		fprintf(stderr, "vramctl: kernel install: kernelspec '%s' has no argv\n", in->from);
		return VR_EXIT_ERROR;
	}
	/* "python3-gpu-8g": the cap in the name, lower case, ',' '=' '%' made safe. */
	if (in->name) {
		snprintf(name, sizeof name, "%s", in->name);
	} else {
		size_t o = 0;

		o = (size_t)snprintf(name, sizeof name, "%s-gpu-", in->from);
		for (const char *c = in->limit; *c && o + 4 < sizeof name; c++)
			name[o++] = *c == '%'                  ? 'p'
			            : (*c == ',' || *c == '=') ? '_'
			                                       : (char)tolower(*c);
		name[o] = '\0';
	}
	if (!valid_name(name)) {
		fprintf(stderr,
		        "vramctl: kernel install: '%s' is not a kernel name (1 to 64 of A-Z a-z "
		        "0-9 . _ -; --name gives one)\n",
		        name);
		return VR_EXIT_ERROR;
	}
	if (fmt_path(group, sizeof group, "%s%s", in->group ? "" : "jupyter-",
	             in->group ? in->group : name) < 0 ||
	    vr_group_name_check(group, NULL, 0) < 0) {
		fprintf(stderr,
		        "vramctl: kernel install: the group name 'jupyter-%s' is too long; "
		        "give --group\n",
		        name);
		return VR_EXIT_ERROR;
	}
	if (in->display) {
		snprintf(display, sizeof display, "%s", in->display);
	} else {
		if (json_get(src, got, "display_name", &f) == 0)
			json_text(&f, base, sizeof base);
		else
			snprintf(base, sizeof base, "%s", in->from);
		if (lim.count == 1 && !lim.item[0].dev[0] && !lim.item[0].is_percent)
			vr_format_size(lim.item[0].bytes, cap, sizeof cap);
		else
			snprintf(cap, sizeof cap, "%s", in->limit);
		snprintf(display, sizeof display, "%s (GPU, %s cap)", base, cap);
	}
	if (self_path(self, sizeof self) < 0 || target_dir(in->where, dir, sizeof dir) < 0)
		return VR_EXIT_ERROR;
	snprintf(kdir, sizeof kdir, "%s/%s", dir, name);
	/* Never take the name of a kernel that is not ours, here or anywhere
	 * Jupyter looks: the new one would hide it (or replace it). */
	{
		char found[PATH_MAX], l[96], g[96], fr[96];

		if ((find_spec(name, found, sizeof found) == 0 &&
		     our_meta(found, l, g, fr, sizeof l) < 0) ||
		    (fmt_path(path, sizeof path, "%s/kernel.json", kdir) == 0 &&
		     access(path, F_OK) == 0 && our_meta(kdir, l, g, fr, sizeof l) < 0)) {
			fprintf(stderr,
			        "vramctl: kernel install: a kernelspec '%s' exists and is not "
			        "vramctl's; choose another --name\n",
			        name);
			return VR_EXIT_ERROR;
		}
	}
	if (mkdirs(kdir) < 0) {
		fprintf(stderr, "vramctl: kernel install: cannot create %s: %s\n", kdir,
		        strerror(errno));
		return VR_EXIT_ERROR;
	}

	/* Written beside, then renamed: Jupyter never reads half a file. */
	fd = fmt_path(tmp, sizeof tmp, "%s/.kernel.json.XXXXXX", kdir) == 0 ? mkstemp(tmp) : -1;
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		fprintf(stderr, "vramctl: kernel install: cannot write in %s: %s\n", kdir,
		        strerror(errno));
		if (fd >= 0)
			close(fd);
		return VR_EXIT_ERROR;
	}
	fputs("{\n  \"argv\": [", out);
	json_puts(out, self);
	fputs(", \"run\", \"--exec\", \"--limit\", ", out);
	json_puts(out, in->limit);
	fputs(", \"--group\", ", out);
	json_puts(out, group);
	fputs(", \"--\", ", out);
	fwrite(argv.p + 1, 1, argv.n - 1, out); /* the wrapped argv, as written */
	fputs(",\n  \"display_name\": ", out);
	json_puts(out, display);
	for (size_t i = 0; i < VR_ARRAY_LEN(keys); i++) {
		if (json_get(src, got, keys[i], &f) == 0) {
			fprintf(out, ",\n  \"%s\": ", keys[i]);
			fwrite(f.p, 1, f.n, out);
		}
	}
	fputs(",\n  \"metadata\": {\"vramctl\": {\"limit\": ", out);
	json_puts(out, in->limit);
	fputs(", \"group\": ", out);
	json_puts(out, group);
	fputs(", \"from\": ", out);
	json_puts(out, in->from);
	fputs("}", out);
	/* The wrapped kernel's own metadata ("debugger": true, ...) stays. */
	if (json_get(src, got, "metadata", &f) == 0 && f.p[0] == '{') {
		const char *a = skip_ws(f.p + 1, f.p + f.n), *b = f.p + f.n - 1;

		while (b > a && strchr(" \t\r\n", b[-1]))
			b--;
		if (b > a) {
			fputs(", ", out);
			fwrite(a, 1, (size_t)(b - a), out);
		}
	}
	fputs("}\n}\n", out);
	fchmod(fd, 0644);
	if (fflush(out) != 0 || ferror(out) || fclose(out) != 0 || rename(tmp, path) < 0) {
		fprintf(stderr, "vramctl: kernel install: cannot write %s: %s\n", path,
		        strerror(errno));
		unlink(tmp);
		return VR_EXIT_ERROR;
	}
	printf("Installed kernelspec %s in %s\n  %s: every notebook on it shares group '%s', "
	       "cap %s\n",
	       name, kdir, display, group, in->limit);
	return 0;
}

/* ---- list, remove --------------------------------------------------------- */

static void list_one(const char *name, const char *dir, void *ctx)
{
	char limit[96], group[96], from[96];

	if (our_meta(dir, limit, group, from, sizeof limit) < 0)
		return;
	if (!*(int *)ctx)
		printf("%-24s %-12s %-24s %-12s %s\n", "NAME", "CAP", "GROUP", "WRAPS", "PATH");
	*(int *)ctx = 1;
	printf("%-24s %-12s %-24s %-12s %s\n", name, limit, group, from, dir);
}

static int rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX + 300];

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (unlink(path) < 0 && errno == EISDIR)
			rm_tree(path);
	}
	closedir(d);
	return rmdir(dir);
}

static int do_remove(const char *name, enum where w)
{
	char dir[PATH_MAX], kdir[PATH_MAX + 80], l[96], g[96], f[96];

	if (!valid_name(name)) {
		fprintf(stderr, "vramctl: kernel remove: '%s' is not a kernel name\n", name);
		return VR_EXIT_ERROR;
	}
	if (w == W_ANY) {
		if (find_spec(name, kdir, sizeof kdir) < 0) {
			fprintf(stderr, "vramctl: kernel remove: no kernelspec '%s'\n", name);
			return VR_EXIT_ERROR;
		}
	} else {
		if (target_dir(w, dir, sizeof dir) < 0)
			return VR_EXIT_ERROR;
		snprintf(kdir, sizeof kdir, "%s/%s", dir, name);
	}
	if (our_meta(kdir, l, g, f, sizeof l) < 0) {
		fprintf(
		    stderr,
		    "vramctl: kernel remove: %s is not a kernel vramctl installed; left alone\n",
		    kdir);
		return VR_EXIT_ERROR;
	}
	if (rm_tree(kdir) < 0) {
		fprintf(stderr, "vramctl: kernel remove: cannot remove %s: %s\n", kdir,
		        strerror(errno));
		return VR_EXIT_ERROR;
	}
	printf("Removed kernelspec %s (%s)\n", name, kdir);
	return 0;
}

/* --user, --sys-prefix, --system; 1 if a was one of them. */
static int where_opt(const char *a, enum where *w)
{
	if (!strcmp(a, "--user"))
		*w = W_USER;
	else if (!strcmp(a, "--sys-prefix"))
		*w = W_SYS_PREFIX;
	else if (!strcmp(a, "--system"))
		*w = W_SYSTEM;
	else
		return 0;
	return 1;
}

int cmd_kernel(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";

	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		kernel_usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "install")) {
		struct install in = {.from = "python3", .where = W_USER};
		static const struct {
			const char *opt;
			size_t off;
		} vals[] = {
		    {"--limit", offsetof(struct install, limit)},
		    {"-l", offsetof(struct install, limit)},
		    {"--group", offsetof(struct install, group)},
		    {"--name", offsetof(struct install, name)},
		    {"--display-name", offsetof(struct install, display)},
		    {"--from", offsetof(struct install, from)},
		};

		for (int i = 2; i < argc; i++) {
			size_t k;

			if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
				install_usage(stdout);
				return 0;
			}
			if (where_opt(argv[i], &in.where))
				continue;
			for (k = 0; k < VR_ARRAY_LEN(vals); k++) {
				size_t l = strlen(vals[k].opt);
				const char **dst =
				    (const char **)(void *)((char *)&in + vals[k].off);

				if (strncmp(argv[i], vals[k].opt, l) != 0)
					continue;
				if (argv[i][l] == '=') {
					*dst = argv[i] + l + 1;
					break;
				}
				if (argv[i][l] == '\0' && i + 1 < argc) {
					*dst = argv[++i];
					break;
				}
			}
			if (k == VR_ARRAY_LEN(vals)) {
				fprintf(stderr, "vramctl: kernel install: bad argument '%s'\n",
				        argv[i]);
				install_usage(stderr);
				return VR_EXIT_ERROR;
			}
		}
		if (!in.limit) {
			fprintf(stderr, "vramctl: kernel install: --limit is required\n");
			return VR_EXIT_ERROR;
		}
		if (in.group && !valid_name(in.group)) {
			fprintf(
			    stderr,
			    "vramctl: kernel install: --group '%s': 1 to 64 of A-Z a-z 0-9 . _ -\n",
			    in.group);
			return VR_EXIT_ERROR;
		}
		return do_install(&in);
	}
	if (!strcmp(sub, "list")) {
		int any = 0;

		if (argc > 2) {
			if (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help")) {
				list_usage(stdout);
				return 0;
			}
			list_usage(stderr);
			return VR_EXIT_ERROR;
		}
		each_spec(list_one, &any);
		if (!any)
			printf("No kernel installed by vramctl ('vramctl kernel install --limit "
			       "8G').\n");
		return 0;
	}
	if (!strcmp(sub, "remove")) {
		const char *name = NULL;
		enum where w = W_ANY;

		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
				remove_usage(stdout);
				return 0;
			}
			if (where_opt(argv[i], &w))
				continue;
			if (argv[i][0] == '-' || name) {
				remove_usage(stderr);
				return VR_EXIT_ERROR;
			}
			name = argv[i];
		}
		if (!name) {
			remove_usage(stderr);
			return VR_EXIT_ERROR;
		}
		return do_remove(name, w);
	}
	kernel_usage(stderr);
	return VR_EXIT_ERROR;
}
