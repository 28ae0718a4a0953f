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
 * Where kernelspecs are found, and reading vramctl's metadata in one:
 * kernel_spec.c.
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
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/fs.h"
#include "cli/kernel_spec.h"
#include "cli/options.h"
#include "common/duration.h"
#include "common/compiler.h"
#include "common/exit.h"
#include "common/size.h"
#include "common/contract.h"
#include "common/json.h"
#include "common/json_read.h"
#include "launch/launch.h"

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
	fprintf(f, "usage: vramctl kernel install --limit SPEC [--guarantee SPEC] [--group GROUP]\n"
	           "                              [--wait[=TIME]] [--park-idle=DURATION]\n"
	           "                              [--name NAME] [--display-name TEXT]\n"
	           "                              [--from KERNEL]\n"
	           "                              [--user|--sys-prefix|--system]\n"
	           "\n"
	           "Writes a kernelspec that starts KERNEL (default python3) under\n"
	           "'vramctl run --exec --limit SPEC --group GROUP'.\n"
	           "\n"
	           "  -l, --limit SPEC      the cap, as for vramctl run (e.g. 8G, 0=8G,1=50%%)\n"
	           "  --guarantee SPEC      memory the group can always reach, as for vramctl\n"
	           "                        run (at most the cap)\n"
	           "  --wait[=TIME]         an allocation the cap refuses waits up to TIME for\n"
	           "                        room (default 60s), as for vramctl run\n"
	           "  --park-idle=DURATION  a notebook idle in its driver calls for DURATION is\n"
	           "                        parked: its GPU memory moves to host memory until\n"
	           "                        its next call (\"manual\": vramctl park only)\n"
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

/* ---- install ------------------------------------------------------------ */

struct install {
	const char *limit, *guarantee, *group, *name, *display, *from;
	const char *wait, *park_idle; /* NULL when not given */
	enum where where;
};

/* The wrapped kernel's kernel.json text; python3 falls back to ipykernel's
 * own spec (what Jupyter offers when no file exists). */
static int load_wrapped(const char *from, char *buf, size_t len, size_t *got)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], py[PATH_MAX];
	FILE *p;

	if (cli_kspec_find(from, dir, sizeof dir) == 0) {
		snprintf(path, sizeof path, "%s/kernel.json", dir);
		if (cli_kspec_read_file(path, buf, len, got) < 0) {
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
		struct jw w = {.f = m};

		if (!m)
			return -1;
		jb_puts(&w, "{\"argv\": [");
		jb_str(&w, py);
		jb_puts(&w,
		        ", \"-m\", \"ipykernel_launcher\", \"-f\", \"{connection_file}\"], "
		        "\"display_name\": \"Python 3 (ipykernel)\", \"language\": \"python\"}");
		jw_finish(&w);
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

	if (cli_kspec_fmt_path(tmp, sizeof tmp, "%s", path) < 0)
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

/* The kernel's name: --name, else "python3-gpu-8g" (the cap in the name,
 * lower case, ',' '=' '%' made safe). 0, or -1 after a message. */
static int kernel_name(const struct install *in, char *name, size_t len)
{
	if (in->name) {
		snprintf(name, len, "%s", in->name);
	} else {
		size_t o = 0;

		o = (size_t)snprintf(name, len, "%s-gpu-", in->from);
		for (const char *c = in->limit; *c && o + 4 < len; c++)
			name[o++] = *c == '%'                  ? 'p'
			            : (*c == ',' || *c == '=') ? '_'
			                                       : (char)tolower(*c);
		name[o] = '\0';
	}
	if (!cli_kspec_valid_name(name)) {
		fprintf(stderr,
		        "vramctl: kernel install: '%s' is not a kernel name (1 to 64 of A-Z a-z "
		        "0-9 . _ -; --name gives one)\n",
		        name);
		return -1;
	}
	return 0;
}

/* The name Jupyter shows: --display-name, else the wrapped kernel's with
 * the cap ("Python 3 (GPU, 8 GiB cap)"), and its group where --name or
 * --group chose one ("..., group team)"): two kernels of one wrapped
 * kernel and cap in two groups never show the same name. */
static void kernel_display(const struct install *in, const struct vr_limits *lim, const char *src,
                           size_t got, const char *group, char *display, size_t len)
{
	char base[256], cap[96];
	struct vr_json_span f;

	if (in->display) {
		snprintf(display, len, "%s", in->display);
		return;
	}
	if (vr_json_get(src, got, "display_name", &f) == 0)
		vr_json_text(&f, base, sizeof base);
	else
		snprintf(base, sizeof base, "%s", in->from);
	if (lim->count == 1 && !lim->item[0].dev[0] && !lim->item[0].is_percent)
		vr_format_size(lim->item[0].bytes, cap, sizeof cap);
	else
		snprintf(cap, sizeof cap, "%s", in->limit);
	if (in->name || in->group)
		snprintf(display, len, "%s (GPU, %s cap, group %s)", base, cap, group);
	else
		snprintf(display, len, "%s (GPU, %s cap)", base, cap);
}

/* Never take the name of a kernel that is not ours, here (kdir, whose
 * kernel.json goes into path) or anywhere Jupyter looks: the new one would
 * hide it (or replace it). 0, or -1 after a message. */
static int name_is_free(const char *name, const char *kdir, char *path, size_t len)
{
	char found[PATH_MAX], l[96], g[96], fr[96];

	if ((cli_kspec_find(name, found, sizeof found) == 0 &&
	     cli_kspec_meta(found, l, g, fr, sizeof l) < 0) ||
	    (cli_kspec_fmt_path(path, len, "%s/kernel.json", kdir) == 0 &&
	     access(path, F_OK) == 0 && cli_kspec_meta(kdir, l, g, fr, sizeof l) < 0)) {
		fprintf(stderr,
		        "vramctl: kernel install: a kernelspec '%s' exists and is not "
		        "vramctl's; choose another --name\n",
		        name);
		return -1;
	}
	return 0;
}

/* The new kernel.json: what it runs and shows, and the wrapped kernelspec
 * src[0..got) (its argv and keys copied as written). */
struct kernel_json {
	const char *self, *group, *display;
	const char *src;
	size_t got;
	struct vr_json_span argv; /* the wrapped kernel's */
};

/* Writes k into w (which jw_finish then ends). */
static void kernel_json(struct jw *w, const struct install *in, const struct kernel_json *k)
{
	static const char *const keys[] = {"language", "interrupt_mode", "env"};
	struct vr_json_span f;

	jb_puts(w, "{\n  \"argv\": [");
	jb_str(w, k->self);
	jb_puts(w, ", \"run\", \"--exec\", \"--limit\", ");
	jb_str(w, in->limit);
	if (in->guarantee) {
		jb_puts(w, ", \"--guarantee\", ");
		jb_str(w, in->guarantee);
	}
	char opt[64];
	if (in->wait) {
		snprintf(opt, sizeof opt, "--wait=%s", in->wait);
		jb_puts(w, ", ");
		jb_str(w, opt);
	}
	if (in->park_idle) {
		snprintf(opt, sizeof opt, "--park-idle=%s", in->park_idle);
		jb_puts(w, ", ");
		jb_str(w, opt);
	}
	jb_puts(w, ", \"--group\", ");
	jb_str(w, k->group);
	jb_puts(w, ", \"--\", ");
	jb_write(w, k->argv.p + 1, k->argv.n - 1); /* the wrapped argv, as written */
	jb_puts(w, ",\n  \"display_name\": ");
	jb_str(w, k->display);
	for (size_t i = 0; i < VR_ARRAY_LEN(keys); i++) {
		if (vr_json_get(k->src, k->got, keys[i], &f) == 0) {
			jb_puts(w, ",\n  \"");
			jb_puts(w, keys[i]);
			jb_puts(w, "\": ");
			jb_write(w, f.p, f.n);
		}
	}
	jb_puts(w, ",\n  \"metadata\": {\"vramctl\": {\"limit\": ");
	jb_str(w, in->limit);
	if (in->guarantee) {
		jb_puts(w, ", \"guarantee\": ");
		jb_str(w, in->guarantee);
	}
	if (in->wait) {
		jb_puts(w, ", \"wait\": ");
		jb_str(w, in->wait);
	}
	if (in->park_idle) {
		jb_puts(w, ", \"park_idle\": ");
		jb_str(w, in->park_idle);
	}
	jb_puts(w, ", \"group\": ");
	jb_str(w, k->group);
	jb_puts(w, ", \"from\": ");
	jb_str(w, in->from);
	jb_puts(w, "}");
	/* The wrapped kernel's own metadata ("debugger": true, ...) stays. */
	if (vr_json_get(k->src, k->got, "metadata", &f) == 0 && f.p[0] == '{') {
		const char *a = vr_json_skip_ws(f.p + 1, f.p + f.n), *b = f.p + f.n - 1;

		while (b > a && strchr(" \t\r\n", b[-1]))
			b--;
		if (b > a) {
			jb_puts(w, ", ");
			jb_write(w, a, (size_t)(b - a));
		}
	}
	jb_puts(w, "}\n}"); /* jw_finish ends the line */
}

/* Writes k as kdir's kernel.json (path): beside, then renamed, so Jupyter
 * never reads half a file. 0, or -1 after a message. */
static int write_kernel_json(const struct install *in, const struct kernel_json *k,
                             const char *kdir, const char *path)
{
	char tmp[PATH_MAX + 96];
	FILE *out;
	int fd;

	fd = cli_kspec_fmt_path(tmp, sizeof tmp, "%s/.kernel.json.XXXXXX", kdir) == 0 ? mkstemp(tmp)
	                                                                              : -1;
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		fprintf(stderr, "vramctl: kernel install: cannot write in %s: %s\n", kdir,
		        strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct jw w = {.f = out};
	kernel_json(&w, in, k);
	int wrc = jw_finish(&w);
	fchmod(fd, 0644);
	if (wrc == -ENOMEM) {
		fclose(out);
		errno = ENOMEM;
	}
	if (wrc == -ENOMEM || fflush(out) != 0 || ferror(out) || fclose(out) != 0 ||
	    rename(tmp, path) < 0) {
		fprintf(stderr, "vramctl: kernel install: cannot write %s: %s\n", path,
		        strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int do_install(const struct install *in)
{
	static char src[KERNEL_JSON_MAX];
	char name[80], group[VR_GROUP_NAME_MAX + 1], display[512], cap[96], self[PATH_MAX];
	char dir[PATH_MAX], kdir[PATH_MAX + 80], path[PATH_MAX + 96];
	struct vr_limits lim;
	struct vr_json_span argv;
	size_t got;

	if (vr_parse_limits(in->limit, &lim, cap, sizeof cap) < 0) {
		fprintf(stderr, "vramctl: kernel install: --limit '%s': %s\n", in->limit, cap);
		return VR_EXIT_ERROR;
	}
	char small[400];
	if (vr_launch_small_cap(&lim, getenv(VR_ENV_COUNT), small, sizeof small))
		fprintf(stderr, "vramctl: kernel install: --limit: %s\n", small);
	/* The guarantee against the cap item by item (the devices are the
	 * kernel's, each time it starts: `vramctl run` checks them then). */
	if (in->guarantee) {
		struct vr_limits gua = {.count = 0};
		char err[300];

		if (cli_add_spec(&gua, "--guarantee", in->guarantee) < 0)
			return VR_EXIT_ERROR;
		if (vr_launch_guarantee_check(&lim, &gua, NULL, -1, err, sizeof err) < 0) {
			fprintf(stderr, "vramctl: kernel install: --guarantee '%s': %s\n",
			        in->guarantee, err);
			return VR_EXIT_ERROR;
		}
	}
	/* --wait and --park-idle are checked now, as vramctl run would at the
	 * kernel's start. */
	uint64_t ms;
	char terr[200];
	if (in->wait && vr_parse_duration(in->wait, 0, &ms, terr, sizeof terr) < 0) {
		fprintf(stderr, "vramctl: kernel install: --wait: %s\n", terr);
		return VR_EXIT_ERROR;
	}
	if (in->park_idle && strcasecmp(in->park_idle, "manual") &&
	    vr_parse_duration(in->park_idle, 0, &ms, terr, sizeof terr) < 0) {
		fprintf(stderr, "vramctl: kernel install: --park-idle: %s (or manual)\n", terr);
		return VR_EXIT_ERROR;
	}
	if (load_wrapped(in->from, src, sizeof src, &got) < 0)
		return VR_EXIT_ERROR;
	if (vr_json_get(src, got, "argv", &argv) < 0 || argv.p[0] != '[') {
		fprintf(stderr, "vramctl: kernel install: kernelspec '%s' has no argv\n", in->from);
		return VR_EXIT_ERROR;
	}
	/* Its argv follows ours: an empty one would leave a dangling comma (and
	 * a kernel that runs nothing). */
	if (*vr_json_skip_ws(argv.p + 1, argv.p + argv.n) == ']') {
		fprintf(stderr,
		        "vramctl: kernel install: kernelspec '%s' has an empty argv: nothing to "
		        "wrap\n",
		        in->from);
		return VR_EXIT_ERROR;
	}
	if (kernel_name(in, name, sizeof name) < 0)
		return VR_EXIT_ERROR;
	if (cli_kspec_fmt_path(group, sizeof group, "%s%s", in->group ? "" : "jupyter-",
	                       in->group ? in->group : name) < 0 ||
	    vr_group_name_check(group, NULL, 0) < 0) {
		fprintf(stderr,
		        "vramctl: kernel install: the group name 'jupyter-%s' is too long; "
		        "give --group\n",
		        name);
		return VR_EXIT_ERROR;
	}
	kernel_display(in, &lim, src, got, group, display, sizeof display);
	if (self_path(self, sizeof self) < 0 ||
	    cli_kspec_target_dir(in->where, dir, sizeof dir) < 0)
		return VR_EXIT_ERROR;
	snprintf(kdir, sizeof kdir, "%s/%s", dir, name);
	if (name_is_free(name, kdir, path, sizeof path) < 0)
		return VR_EXIT_ERROR;
	if (mkdirs(kdir) < 0) {
		fprintf(stderr, "vramctl: kernel install: cannot create %s: %s\n", kdir,
		        strerror(errno));
		return VR_EXIT_ERROR;
	}
	struct kernel_json k = {
	    .self = self, .group = group, .display = display, .src = src, .got = got, .argv = argv};
	if (write_kernel_json(in, &k, kdir, path) < 0)
		return VR_EXIT_ERROR;
	printf("Installed kernelspec %s in %s\n  %s: every notebook on it shares group '%s', "
	       "cap %s\n",
	       name, kdir, display, group, in->limit);
	return 0;
}

/* ---- list, remove --------------------------------------------------------- */

/* `kernel list`'s rows, gathered first so that each column is as wide as
 * its widest cell. */
#define LIST_MAX 256
struct list_row {
	char name[72], limit[96], group[96], from[96], dir[PATH_MAX];
};
struct list_rows {
	int n;
	struct list_row *row;
};

static void list_one(const char *name, const char *dir, void *ctx)
{
	struct list_rows *l = ctx;
	struct list_row *r;

	if (l->n == LIST_MAX)
		return;
	r = &l->row[l->n];
	if (cli_kspec_meta(dir, r->limit, r->group, r->from, sizeof r->limit) < 0)
		return;
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	l->n++;
}

static int width(int w, const char *s)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

/* Prints the kernels vramctl installed: 0, or VR_EXIT_ERROR. */
static int do_list(void)
{
	struct list_rows l = {0, calloc(LIST_MAX, sizeof(struct list_row))};
	int wn = 4, wl = 3, wg = 5, wf = 5;

	if (!l.row) {
		fprintf(stderr, "vramctl: kernel list: out of memory\n");
		return VR_EXIT_ERROR;
	}
	cli_kspec_each(list_one, &l);
	if (!l.n)
		printf("No kernel installed by vramctl ('vramctl kernel install --limit 8G').\n");
	for (int i = 0; i < l.n; i++) {
		wn = width(wn, l.row[i].name);
		wl = width(wl, l.row[i].limit);
		wg = width(wg, l.row[i].group);
		wf = width(wf, l.row[i].from);
	}
	for (int i = -1; l.n && i < l.n; i++) {
		const struct list_row *r = i < 0 ? NULL : &l.row[i];

		printf("%-*s  %-*s  %-*s  %-*s  %s\n", wn, r ? r->name : "NAME", wl,
		       r ? r->limit : "CAP", wg, r ? r->group : "GROUP", wf, r ? r->from : "WRAPS",
		       r ? r->dir : "PATH");
	}
	free(l.row);
	return 0;
}

static int do_remove(const char *name, enum where w)
{
	char dir[PATH_MAX], kdir[PATH_MAX + 80], l[96], g[96], f[96];

	if (!cli_kspec_valid_name(name)) {
		fprintf(stderr, "vramctl: kernel remove: '%s' is not a kernel name\n", name);
		return VR_EXIT_ERROR;
	}
	if (w == W_ANY) {
		if (cli_kspec_find(name, kdir, sizeof kdir) < 0) {
			fprintf(stderr, "vramctl: kernel remove: no kernelspec '%s'\n", name);
			return VR_EXIT_ERROR;
		}
	} else {
		if (cli_kspec_target_dir(w, dir, sizeof dir) < 0)
			return VR_EXIT_ERROR;
		snprintf(kdir, sizeof kdir, "%s/%s", dir, name);
	}
	if (cli_kspec_meta(kdir, l, g, f, sizeof l) < 0) {
		fprintf(
		    stderr,
		    "vramctl: kernel remove: %s is not a kernel vramctl installed; left alone\n",
		    kdir);
		return VR_EXIT_ERROR;
	}
	if (cli_remove_tree(kdir) < 0) {
		fprintf(stderr, "vramctl: kernel remove: cannot remove %s: %s\n", kdir,
		        strerror(errno));
		return VR_EXIT_ERROR;
	}
	printf("Removed kernelspec %s (%s)\n", name, kdir);
	return 0;
}

/* The options of install and remove; long-only ones take values from 256 up. */
enum {
	OPT_USER = 256,
	OPT_SYS_PREFIX,
	OPT_SYSTEM,
	OPT_GROUP,
	OPT_NAME,
	OPT_DISPLAY,
	OPT_FROM,
	OPT_GUARANTEE,
	OPT_WAIT,
	OPT_PARK_IDLE
};

static const struct option install_opts[] = {
    {"limit", required_argument, NULL, 'l'},
    {"guarantee", required_argument, NULL, OPT_GUARANTEE},
    {"group", required_argument, NULL, OPT_GROUP},
    {"name", required_argument, NULL, OPT_NAME},
    {"display-name", required_argument, NULL, OPT_DISPLAY},
    {"from", required_argument, NULL, OPT_FROM},
    {"wait", optional_argument, NULL, OPT_WAIT},
    {"park-idle", required_argument, NULL, OPT_PARK_IDLE},
    {"user", no_argument, NULL, OPT_USER},
    {"sys-prefix", no_argument, NULL, OPT_SYS_PREFIX},
    {"system", no_argument, NULL, OPT_SYSTEM},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* remove's: install's --user, --sys-prefix, --system and --help. */
static const struct option *const remove_opts = install_opts + 8;

/* --user, --sys-prefix, --system as option c; 1 if c was one of them. */
static int where_opt(int c, enum where *w)
{
	if (c == OPT_USER)
		*w = W_USER;
	else if (c == OPT_SYS_PREFIX)
		*w = W_SYS_PREFIX;
	else if (c == OPT_SYSTEM)
		*w = W_SYSTEM;
	else
		return 0;
	return 1;
}

/* `kernel install`'s options (argv[0] is "install"). Fills in; returns -1
 * to go on, or the exit status. */
static int install_options(int argc, char **argv, struct install *in)
{
	const char *word = "";
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, "+:l:h", install_opts, &word)) != -1) {
		if (c == 'h') {
			install_usage(stdout);
			return 0;
		}
		if (where_opt(c, &in->where))
			continue;
		switch (c) {
		case 'l':
			in->limit = optarg;
			continue;
		case OPT_GUARANTEE:
			in->guarantee = optarg;
			continue;
		case OPT_GROUP:
			in->group = optarg;
			continue;
		case OPT_NAME:
			in->name = optarg;
			continue;
		case OPT_DISPLAY:
			in->display = optarg;
			continue;
		case OPT_FROM:
			in->from = optarg;
			continue;
		case OPT_WAIT:
			in->wait = optarg ? optarg : "60s";
			continue;
		case OPT_PARK_IDLE:
			in->park_idle = optarg;
			continue;
		}
		break; /* ':' or '?' */
	}
	if (c != -1)
		return cli_option_error("kernel install", c, word);
	if (optind < argc)
		return cli_usage_error("kernel install", "unexpected argument '%s'", argv[optind]);
	return -1;
}

/* `kernel remove`'s arguments (argv[0] is "remove"): NAME among the
 * options. Returns -1 to go on, or the exit status. */
static int remove_options(int argc, char **argv, const char **name, enum where *w)
{
	const char *word = "";
	int c;

	optind = 1;
	while ((c = cli_getopt(argc, argv, "-:h", remove_opts, &word)) != -1) {
		if (c == 'h') {
			remove_usage(stdout);
			return 0;
		}
		if (where_opt(c, w))
			continue;
		if (c != 1 || optarg[0] == '-' || *name)
			break;
		*name = optarg;
	}
	if (c == ':' || c == '?')
		return cli_option_error("kernel remove", c, word);
	if (c == 1 && optarg[0] == '-')
		return cli_usage_error("kernel remove", "unknown option '%s'", optarg);
	if (c == 1)
		return cli_usage_error("kernel remove", "one NAME at a time: '%s'", optarg);
	if (optind < argc)
		return cli_usage_error("kernel remove", "unexpected argument '%s'", argv[optind]);
	if (!*name)
		return cli_usage_error("kernel remove", "no NAME given");
	return -1;
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
		int rc = install_options(argc - 1, argv + 1, &in);

		if (rc != -1)
			return rc;
		if (!in.limit) {
			fprintf(stderr, "vramctl: kernel install: --limit is required\n");
			return VR_EXIT_ERROR;
		}
		if (in.group && !cli_kspec_valid_name(in.group)) {
			fprintf(
			    stderr,
			    "vramctl: kernel install: --group '%s': 1 to 64 of A-Z a-z 0-9 . _ -\n",
			    in.group);
			return VR_EXIT_ERROR;
		}
		return do_install(&in);
	}
	if (!strcmp(sub, "list")) {
		if (argc > 2) {
			if (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help")) {
				list_usage(stdout);
				return 0;
			}
			return cli_usage_error("kernel list", "unexpected argument '%s'", argv[2]);
		}
		return do_list();
	}
	if (!strcmp(sub, "remove")) {
		const char *name = NULL;
		enum where w = W_ANY;

		int rc = remove_options(argc - 1, argv + 1, &name, &w);

		if (rc != -1)
			return rc;
		return do_remove(name, w);
	}
	if (!*sub)
		return cli_usage_error("kernel", "no subcommand given (install, list, remove)");
	return cli_usage_error("kernel", "unknown subcommand '%s' (install, list, remove)", sub);
}
