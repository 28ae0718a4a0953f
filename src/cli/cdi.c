/*
 * cdi.c - `vramctl cdi generate`: a Container Device Interface spec whose
 * device gives a container a GPU memory cap.
 *
 *   podman run --device nvidia.com/gpu=0 --device vramctl.io/gpu=4g IMAGE ...
 *
 * NVIDIA's device brings the GPU and its driver libraries; vramctl's brings
 * the cap. The spec only sets the environment contract (contract.h) and
 * mounts; the injected library does the enforcing, as under `vramctl run`:
 *
 *   env     VRAMCTL_LIMIT, VRAMCTL_REGISTRY_DIR, VRAMCTL_GROUP (--group only),
 *           VRAMCTL_GUARANTEE (--guarantee only), VRAMCTL_WAIT (--wait only),
 *           VRAMCTL_PARK_IDLE and VRAMCTL_PARK_BUDGET (--park-idle only)
 *   mounts  the library, read-only, at CONTAINER_LIB; with --park-idle, the
 *           checkpoint helper beside it (CONTAINER_HELPER);
 *           a one-line ld.so.preload naming it, at /etc/ld.so.preload;
 *           the host's books directory, at the same path (so the host's
 *           `vramctl status` lists the container's processes);
 *           the contract as a file (the env's VRAMCTL_* lines), read-only,
 *           at VR_CONTRACT_FILE: a process whose environment lost the
 *           contract (env -u VRAMCTL_LIMIT, env -i, an ssh session, podman
 *           exec with a cleared environment) takes it from there, and one
 *           whose environment asks for more is still held to it (hook/job.h).
 *           Written under --contract-dir (default /etc/vramctl/cdi for
 *           root, else $XDG_CONFIG_HOME/vramctl/cdi), never inside the
 *           books directory, which the container may write.
 *           with --guarantee, root's device-book directory (/run/vramctl:
 *           the books and the guard service's socket), read-only: the
 *           container's processes read the host's guarantees and ask the
 *           guard service for theirs, which the kernel tells it are the
 *           container's (SO_PEERCRED: host PIDs and uids).
 *
 * Preloading through /etc/ld.so.preload rather than LD_PRELOAD: a CDI env
 * edit replaces a variable the image sets, and ld.so loads both lists, so
 * an image's own LD_PRELOAD keeps all its entries. The cost: an image's own
 * /etc/ld.so.preload is hidden (rare; documented in vramctl-cdi(1)).
 *
 * Without --group, the library makes each container one group, named after
 * its PID namespace (books.c): containers sharing the host's books never
 * collide, and all processes of a container share its cap.
 *
 * The spec is written at the lowest cdiVersion that holds it: 0.3.0 (env and
 * mounts without a type), or 0.5.0 when the device name starts with a digit
 * (allowed from 0.5.0). Podman 4.3 (Debian 12) reads up to 0.5.0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/libexec.h"
#include "registry/devbook.h"
#include "cli/options.h"
#include "cli/paths.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "common/duration.h"
#include "common/enforce.h"
#include "common/exit.h"
#include "common/siteconf.h"
#include "common/size.h"
#include "common/spill.h"
#include "launch/launch.h"
#include "registry/registry.h"

#define CDI_KIND      "vramctl.io/gpu"
#define CONTAINER_LIB "/usr/lib/vramctl/libvramctl.so"
/* Where the library looks for it beside itself (hook/ckpt.c). */
#define CONTAINER_HELPER "/usr/libexec/vramctl/vramctl-checkpoint"
#define PRELOAD_NAME     "ld.so.preload"
#define NAME_MAX_LEN     128

static void cdi_usage(FILE *f)
{
	fprintf(f,
	        "usage: vramctl cdi generate --limit SPEC [--guarantee SPEC] [--growth]\n"
	        "                            [--wait[=TIME]] [--park-idle=DURATION]\n"
	        "                            [--group NAME] [--name NAME] [--format json|yaml]\n"
	        "                            [--output FILE] [--registry DIR]\n"
	        "                            [--enforce library|driver|both]\n"
	        "\n"
	        "Writes a CDI spec (kind " CDI_KIND ") whose device gives a container a\n"
	        "GPU memory cap: podman run --device nvidia.com/gpu=0 --device " CDI_KIND
	        "=NAME ...\n"
	        "\n"
	        "  -l, --limit SPEC  the cap, as for vramctl run (DEV: the container's device\n"
	        "                    index or a GPU UUID); comma-separated or repeated\n"
	        "  --guarantee SPEC  memory the container's group can always reach on each\n"
	        "                    device it names (same grammar, at most the cap there)\n"
	        "  --growth          frameworks that preallocate grow on demand instead\n"
	        "  --wait[=TIME]     an allocation the cap refuses waits up to TIME for room\n"
	        "                    (default 60s), then is refused\n"
	        "  --park-idle=DURATION  a process idle in its driver calls for DURATION is\n"
	        "                    parked (its GPU memory moved to host memory until its\n"
	        "                    next call; \"manual\": vramctl park only); the spec mounts\n"
	        "                    vramctl-checkpoint for it\n"
	        "  --group NAME      one cap shared by every container with this device\n"
	        "                    (default: one group per container)\n"
	        "  --name NAME       the device's name (default: from SPEC, 4G -> 4g)\n"
	        "  --format FMT      json (default) or yaml\n"
	        "  -o, --output FILE write FILE (replaced whole) instead of standard output\n"
	        "  --registry DIR    the host's registry directory (the books) to share\n"
	        "                    (--books DIR: the same; default:\n"
	        "                    $VRAMCTL_REGISTRY_DIR, else vramctl.conf's registry_dir,\n"
	        "                    else /run/vramctl for root, else vramctl status's)\n"
	        "  --contract-dir DIR  where the contract file the spec mounts at\n"
	        "                    " VR_CONTRACT_FILE " is written (default: /etc/vramctl/cdi\n"
	        "                    for root, else ~/.config/vramctl/cdi)\n"
	        "  --enforce WHO     library (default: the injected library), driver (NVIDIA's\n"
	        "                    own per-cgroup limit: NVIDIA_GPU_MEMORY_LIMIT, applied by\n"
	        "                    NVIDIA's CDI hook; R615+, cgroup v2; one amount for all\n"
	        "                    GPUs, whole MiB) or both\n"
	        "  -h, --help        this text\n"
	        "\n"
	        "Exit status: 0, or 125 with one message. See vramctl-cdi(1).\n");
}

static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* CDI's device-name rule: [A-Za-z0-9] first and last, [A-Za-z0-9_.:-] inside. */
static int valid_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > NAME_MAX_LEN || !is_alnum((unsigned char)n[0]) ||
	    !is_alnum((unsigned char)n[len - 1]))
		return 0;
	for (; *n; n++)
		if (!is_alnum((unsigned char)*n) && !strchr("_.:-", *n))
			return 0;
	return 1;
}

/* The default name: the spec in lower case, "=" -> "-", "," -> "_",
 * "%" -> "pct" (4G -> 4g, 0=4G,1=50% -> 0-4g_1-50pct). */
static int name_from_spec(const char *spec, char *out, size_t len)
{
	size_t n = 0;
	for (const char *p = spec; *p; p++) {
		const char *put;
		char one[2] = {*p, 0};
		if (*p >= 'A' && *p <= 'Z')
			one[0] = (char)(*p - 'A' + 'a');
		put = *p == '=' ? "-" : *p == ',' ? "_" : *p == '%' ? "pct" : one;
		if (n + strlen(put) >= len)
			return -1;
		memcpy(out + n, put, strlen(put));
		n += strlen(put);
	}
	out[n] = '\0';
	return valid_name(out) ? 0 : -1;
}

/* A double-quoted scalar, valid as JSON and as YAML. */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

struct mount {
	const char *host, *container, *mode;
};

struct spec {
	const char *version, *name;
	char env[12][PATH_MAX + 64]; /* "NAME=value" */
	int nenv;
	struct mount mounts[6];
	int nmounts;
};

/*
 * The contract as every launcher writes it (launch.h), into the spec's env.
 * Two kinds of variable stay out, because a CDI env edit replaces what the
 * image sets: LD_PRELOAD (the spec preloads through /etc/ld.so.preload, so
 * the image's own list is kept) and those a launcher sets only when unset
 * (the frameworks' growth switches: the library's constructor sets them
 * itself under VRAMCTL_GROWTH=1, never over the image's values).
 */
static int spec_env(void *ctx, const char *name, const char *value, int overwrite)
{
	struct spec *s = ctx;
	if (!strcmp(name, "LD_PRELOAD") || !overwrite || !value)
		return 0;
	if (s->nenv >= (int)VR_ARRAY_LEN(s->env) ||
	    snprintf(s->env[s->nenv], sizeof s->env[0], "%s=%s", name, value) >=
	        (int)sizeof s->env[0])
		return -1;
	s->nenv++;
	return 0;
}

static void put_options(FILE *f, const char *mode)
{
	fprintf(f, "[\"%s\", \"nosuid\", \"nodev\", \"bind\"]", mode);
}

static void write_json(FILE *f, const struct spec *s)
{
	fprintf(f, "{\n  \"cdiVersion\": \"%s\",\n  \"kind\": \"%s\",\n", s->version, CDI_KIND);
	fprintf(f, "  \"devices\": [\n    {\n      \"name\": ");
	put_str(f, s->name);
	fprintf(f, ",\n      \"containerEdits\": {\n        \"env\": [");
	for (int i = 0; i < s->nenv; i++) {
		fprintf(f, "%s\n          ", i ? "," : "");
		put_str(f, s->env[i]);
	}
	fprintf(f, "\n        ],\n        \"mounts\": [");
	for (int i = 0; i < s->nmounts; i++) {
		const struct mount *m = &s->mounts[i];
		fprintf(f, "%s\n          {\n            \"hostPath\": ", i ? "," : "");
		put_str(f, m->host);
		fprintf(f, ",\n            \"containerPath\": ");
		put_str(f, m->container);
		fprintf(f, ",\n            \"options\": ");
		put_options(f, m->mode);
		fprintf(f, "\n          }");
	}
	fprintf(f, "\n        ]\n      }\n    }\n  ]\n}\n");
}

static void write_yaml(FILE *f, const struct spec *s)
{
	fprintf(f, "cdiVersion: \"%s\"\nkind: \"%s\"\ndevices:\n  - name: ", s->version, CDI_KIND);
	put_str(f, s->name);
	fprintf(f, "\n    containerEdits:\n      env:\n");
	for (int i = 0; i < s->nenv; i++) {
		fprintf(f, "        - ");
		put_str(f, s->env[i]);
		fputc('\n', f);
	}
	fprintf(f, "      mounts:%s\n", s->nmounts ? "" : " []");
	for (int i = 0; i < s->nmounts; i++) {
		const struct mount *m = &s->mounts[i];
		fprintf(f, "        - hostPath: ");
		put_str(f, m->host);
		fprintf(f, "\n          containerPath: ");
		put_str(f, m->container);
		fprintf(f, "\n          options: ");
		put_options(f, m->mode);
		fputc('\n', f);
	}
}

/* The preload file beside the library must name CONTAINER_LIB: a spec
 * that preloads nothing would silently lose the cap. */
static int check_preload(const char *path)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	if (strcmp(buf, CONTAINER_LIB "\n") != 0) {
		fprintf(stderr,
		        "vramctl: %s %s (it must hold the one line " CONTAINER_LIB
		        "; make install puts it beside the library)\n",
		        path, f ? "has other content" : "is missing");
		return -1;
	}
	return 0;
}

/* The system's books directory for a spec root writes (tests point
 * CDI_SYSTEM_ENV elsewhere; secure_getenv: not in set-ID programs). */
#define CDI_SYSTEM_BOOKS "/run/vramctl"
#define CDI_SYSTEM_ENV   "VRAMCTL_CDI_SYSTEM_BOOKS"

/* The host's books directory: absolute, created (0700) if missing (a bind
 * mount of a missing directory stops the container from starting), and
 * passing the check the library applies, so that no container falls back
 * to books of its own because of it. */
static int books_dir(const char *opt, char *out, size_t len)
{
	char err[300] = "";
	const char *env = getenv(VR_ENV_REGISTRY_DIR), *sys = secure_getenv(CDI_SYSTEM_ENV);
	if (opt) {
		snprintf(out, len, "%s", opt);
	} else if ((env && *env) || VR_SITE_TEXT_OF(vr_site_get(), registry_dir)) {
		/* A directory named for vramctl: by the caller, or the site. */
		if (vr_default_dir(out, len) < 0) {
			fprintf(stderr,
			        "vramctl: cannot tell the books directory; give --registry DIR\n");
			return -1;
		}
		fprintf(stderr, "vramctl: cdi: books directory %s (%s; --registry to choose)\n",
		        out,
		        env && *env ? "VRAMCTL_REGISTRY_DIR" : "registry_dir, vramctl.conf(5)");
	} else if (geteuid() == 0) {
		/*
		 * Root's spec goes to /etc/cdi for every container of the host: a
		 * system directory, not root's private /tmp/vramctl-0 or a login's
		 * runtime directory.
		 */
		snprintf(out, len, "%s", sys && *sys ? sys : CDI_SYSTEM_BOOKS);
		fprintf(stderr,
		        "vramctl: cdi: books directory %s (the system's default; --registry to "
		        "choose); the host's views read it with registry_dir = %s in "
		        "vramctl.conf(5), or VRAMCTL_REGISTRY_DIR=%s\n",
		        out, out, out);
	} else if (vr_default_dir(out, len) < 0) {
		fprintf(stderr, "vramctl: cannot tell the books directory; give --registry DIR\n");
		return -1;
	} else {
		fprintf(stderr,
		        "vramctl: cdi: books directory %s (yours, as vramctl status reads it; "
		        "--registry to choose)\n",
		        out);
	}
	if (out[0] != '/') {
		fprintf(stderr, "vramctl: --registry '%s': an absolute path is needed\n", out);
		return -1;
	}
	/* mkdir's mode can only lose bits to the umask: 0700 stays 0700. */
	if (mkdir(out, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "vramctl: cannot create the books directory %s: %s\n", out,
		        strerror(errno));
		return -1;
	}
	if (vr_check_dir(out, NULL, err, sizeof err) < 0) {
		fprintf(stderr, "vramctl: %s\n", err);
		return -1;
	}
	return 0;
}

/* Checks of option values: each prints its own message and returns -1. */
static int check_wait(const char *v)
{
	char err[200];
	uint64_t ms;
	if (vr_parse_duration(v, 0, &ms, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "vramctl: --wait: %s\n", err);
	return -1;
}

static int check_park(const char *v)
{
	char err[200];
	uint64_t ms;
	if (!strcasecmp(v, "manual") || vr_parse_duration(v, 0, &ms, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "vramctl: --park-idle: %s (or manual)\n", err);
	return -1;
}

static int check_group(const char *v)
{
	char err[200];
	if (vr_group_name_check(v, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "vramctl: --group: %s\n", err);
	return -1;
}

static int check_name(const char *v)
{
	if (valid_name(v))
		return 0;
	fprintf(stderr,
	        "vramctl: --name '%s': a CDI device name is 1 to %d of A-Z a-z 0-9 _ . : -, "
	        "starting and ending with a letter or digit\n",
	        v, NAME_MAX_LEN);
	return -1;
}

static int check_format(const char *v)
{
	if (!strcmp(v, "json") || !strcmp(v, "yaml"))
		return 0;
	fprintf(stderr, "vramctl: --format '%s': json or yaml\n", v);
	return -1;
}

static int check_output(const char *v)
{
	if (*v)
		return 0;
	fprintf(stderr, "vramctl: --output needs a file name\n");
	return -1;
}

/* generate's options; long-only ones take values from 256 up. */
enum {
	OPT_GROWTH = 256,
	OPT_GROUP,
	OPT_NAME,
	OPT_FORMAT,
	OPT_BOOKS,
	OPT_GUARANTEE,
	OPT_ENFORCE,
	OPT_CONTRACTS,
	OPT_WAIT,
	OPT_PARK_IDLE
};

static const struct option generate_opts[] = {
    {"limit", required_argument, NULL, 'l'},
    {"guarantee", required_argument, NULL, OPT_GUARANTEE},
    {"growth", no_argument, NULL, OPT_GROWTH},
    {"wait", optional_argument, NULL, OPT_WAIT},
    {"park-idle", required_argument, NULL, OPT_PARK_IDLE},
    {"group", required_argument, NULL, OPT_GROUP},
    {"name", required_argument, NULL, OPT_NAME},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"registry", required_argument, NULL, OPT_BOOKS},
    {"books", required_argument, NULL, OPT_BOOKS}, /* its name before --registry */
    {"contract-dir", required_argument, NULL, OPT_CONTRACTS},
    {"enforce", required_argument, NULL, OPT_ENFORCE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* An option with one string value: where the value goes, and the check it
 * must pass (NULL: any). */
struct str_opt {
	int val;
	const char **dest;
	int (*check)(const char *v);
};

/* 1 when option c is one of opts (value v stored and checked), 0 when
 * none, -1 on a bad value (message printed). */
static int string_option(int c, const char *v, const struct str_opt *opts, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (opts[k].val != c)
			continue;
		if (opts[k].check && opts[k].check(v) < 0)
			return -1;
		*opts[k].dest = v;
		return 1;
	}
	return 0;
}

/*
 * The file --output writes: path itself when it is a regular file or does
 * not exist; through a symlink, the regular file it names (the symlink
 * stays). Anything else (a device node, a FIFO, a directory, a symlink to
 * one or to nothing) is refused with one line: writing beside it and
 * renaming would replace it with a regular file. Returns 0 with the file's
 * name in out, or -1.
 */
static int output_target(const char *path, char *out, size_t len)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "vramctl: cannot write %s: %s\n", path, strerror(errno));
			return -1;
		}
		return snprintf(out, len, "%s", path) < (int)len ? 0 : -1;
	}
	if (S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL);
		if (!real || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
			fprintf(stderr,
			        "vramctl: --output %s: a symlink to %s, not to a regular file: "
			        "refused\n",
			        path, real ? real : "nothing");
			free(real);
			return -1;
		}
		int n = snprintf(out, len, "%s", real);
		free(real);
		return n < (int)len ? 0 : -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "vramctl: --output %s: not a regular file (%s): refused\n", path,
		        S_ISDIR(st.st_mode)    ? "a directory"
		        : S_ISCHR(st.st_mode)  ? "a character device"
		        : S_ISBLK(st.st_mode)  ? "a block device"
		        : S_ISFIFO(st.st_mode) ? "a FIFO"
		                               : "a socket");
		return -1;
	}
	return snprintf(out, len, "%s", path) < (int)len ? 0 : -1;
}

/* Writes the spec to path whole (a temporary file renamed over it), so a
 * runtime reading the spec directory never sees half of it; never over
 * anything but a regular file (output_target). */
static int write_file(const char *out, const struct spec *s, int yaml)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	if (output_target(out, path, sizeof path) != 0)
		return -1;
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		fprintf(stderr, "vramctl: --output '%s': path too long\n", path);
		return -1;
	}
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "vramctl: cannot write %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	(yaml ? write_yaml : write_json)(f, s);
	int bad = fchmod(fd, 0644) != 0 || fflush(f) != 0 || fsync(fd) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		fprintf(stderr, "vramctl: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* One --limit or --guarantee: its items added to *all (checked), its text to
 * text (comma-joined, as typed). 0, or -1 after a message. */
static int add_spec(struct vr_limits *all, const char *opt, const char *value, char *text,
                    size_t len)
{
	size_t n = strlen(text);

	if (cli_add_spec(all, opt, value) < 0)
		return -1;
	if (n + strlen(value) + 2 > len) {
		fprintf(stderr, "vramctl: %s: too long\n", opt);
		return -1;
	}
	snprintf(text + n, len - n, "%s%s", n ? "," : "", value);
	return 0;
}

/* The spec to output (a file) or standard output. 0 or VR_EXIT_ERROR. */
static int write_spec(const struct spec *s, const char *format, const char *output)
{
	int yaml = !strcmp(format, "yaml");
	if (output)
		return write_file(output, s, yaml) < 0 ? VR_EXIT_ERROR : 0;
	(yaml ? write_yaml : write_json)(stdout, s);
	return fflush(stdout) == 0 ? 0 : VR_EXIT_ERROR;
}

static int check_enforce(const char *v)
{
	enum vr_enforce e;
	if (vr_enforce_parse(v, &e) == 0)
		return 0;
	fprintf(stderr, "vramctl: --enforce '%s': library, driver or both\n", v);
	return -1;
}

/* One amount for every device, in whole MiB (rounded down): the only form
 * NVIDIA's variables take. 0 with *mib, or -1. */
static int one_amount(const struct vr_limits *l, unsigned long long *mib)
{
	const struct vr_limit *it = &l->item[0];
	if (l->count != 1 || it->dev[0] || it->is_percent)
		return -1;
	*mib = it->bytes >> 20;
	return 0;
}

/*
 * NVIDIA's container toolkit applies the driver's limit from two variables
 * (its apply-cuda-memory-limits CDI hook, in NVIDIA's GPU device spec):
 * NVIDIA_GPU_MEMORY_LIMIT and NVIDIA_GPU_MEMORY_REQUEST, decimal whole MiB,
 * both needed (it does nothing with one), the request at most the limit,
 * one pair for every GPU of the container. So the cap (and the guarantee,
 * the request; else 0) must be one amount for every device; each is rounded
 * down to whole MiB (never above what was asked). Returns 0, or -1 after a
 * message.
 */
static int driver_env(const struct vr_limits *lim, const struct vr_limits *gua, struct spec *s)
{
	unsigned long long mib, req = 0;
	if (one_amount(lim, &mib) < 0 || (gua->count && one_amount(gua, &req) < 0)) {
		fprintf(stderr, "vramctl: --enforce driver: the driver's limit is one amount in "
		                "bytes for every GPU of the container (NVIDIA_GPU_MEMORY_LIMIT): "
		                "give --limit SIZE (and --guarantee SIZE), no DEV= and no "
		                "percentage\n");
		return -1;
	}
	if (mib == 0 || s->nenv + 2 > (int)VR_ARRAY_LEN(s->env)) {
		fprintf(stderr, "vramctl: --enforce driver: the limit is whole MiB, at least 1M\n");
		return -1;
	}
	snprintf(s->env[s->nenv++], sizeof s->env[0], "NVIDIA_GPU_MEMORY_LIMIT=%llu", mib);
	snprintf(s->env[s->nenv++], sizeof s->env[0], "NVIDIA_GPU_MEMORY_REQUEST=%llu",
	         req < mib ? req : mib);
	return 0;
}

/* The contract files' directory: opt, else $VRAMCTL_CDI_CONTRACTS (tests),
 * else /etc/vramctl/cdi for root, else the user's configuration. */
static int contracts_dir(const char *opt, char *out, size_t len)
{
	const char *test = secure_getenv("VRAMCTL_CDI_CONTRACTS");
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
	int n;
	if (opt)
		n = snprintf(out, len, "%s", opt);
	else if (test && *test)
		n = snprintf(out, len, "%s", test);
	else if (geteuid() == 0)
		n = snprintf(out, len, "/etc/vramctl/cdi");
	else if (xdg && xdg[0] == '/')
		n = snprintf(out, len, "%s/vramctl/cdi", xdg);
	else if (home && home[0] == '/')
		n = snprintf(out, len, "%s/.config/vramctl/cdi", home);
	else
		n = -1;
	if (n < 0 || (size_t)n >= len || out[0] != '/') {
		fprintf(stderr, "vramctl: cdi: no directory for the contract file; give "
		                "--contract-dir DIR (an absolute path)\n");
		return -1;
	}
	return 0;
}

/* mkdir -p, 0755. 0 or -1 (errno). */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = '\0';
		int rc = mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
		*p = c;
		if (rc || !c)
			return rc;
	}
}

/*
 * The contract file the spec mounts at VR_CONTRACT_FILE: the spec's
 * VRAMCTL_* variables, one NAME=value a line, written whole (a temporary
 * file renamed over it), 0644, as <dir>/<device name>.contract. Its path
 * into path. 0, or -1 after a message.
 */
static int write_contract(const char *opt, const char *name, const struct spec *s, char *path,
                          size_t len)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 16];
	if (contracts_dir(opt, dir, sizeof dir) < 0)
		return -1;
	if (make_dirs(dir) != 0) {
		fprintf(stderr, "vramctl: cdi: cannot make %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (snprintf(path, len, "%s/%s.contract", dir, name) >= (int)len ||
	    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		fprintf(stderr, "vramctl: cdi: %s: path too long\n", dir);
		return -1;
	}
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "vramctl: cdi: cannot write %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(f,
	        "# vramctl's contract for the CDI device %s (vramctl-cdi(1)); the spec mounts "
	        "it read-only at %s\n",
	        name, VR_CONTRACT_FILE);
	for (int i = 0; i < s->nenv; i++)
		if (!strncmp(s->env[i], "VRAMCTL_", 8))
			fprintf(f, "%s\n", s->env[i]);
	int bad = fchmod(fd, 0644) != 0 || fflush(f) != 0 || fsync(fd) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		fprintf(stderr, "vramctl: cdi: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int cdi_generate(int argc, char **argv)
{
	struct vr_limits lim, gua;
	char gua_text[4096] = "";
	char spec_text[4096] = "", name[NAME_MAX_LEN + 1], lib[PATH_MAX], preload[PATH_MAX + 16];
	char books[PATH_MAX];
	const char *group = NULL, *name_opt = NULL, *format = "json", *output = NULL;
	const char *books_opt = NULL, *enforce_opt = "library", *contracts_opt = NULL;
	const char *wait = NULL, *park = NULL;
	int growth = 0;
	enum vr_enforce enforce;

	const struct str_opt opts[] = {
	    {OPT_GROUP, &group, check_group},      {OPT_NAME, &name_opt, check_name},
	    {OPT_FORMAT, &format, check_format},   {'o', &output, check_output},
	    {OPT_BOOKS, &books_opt, NULL},         {OPT_ENFORCE, &enforce_opt, check_enforce},
	    {OPT_CONTRACTS, &contracts_opt, NULL}, {OPT_WAIT, &wait, check_wait},
	    {OPT_PARK_IDLE, &park, check_park},
	};
	const char *word = "";
	int opt;
	memset(&lim, 0, sizeof lim);
	memset(&gua, 0, sizeof gua);
	optind = 1;
	while ((opt = cli_getopt(argc, argv, "+:l:o:h", generate_opts, &word)) != -1) {
		if (opt == ':')
			return cli_option_error("cdi generate", opt, word);
		if (opt == '?')
			break;
		if (opt == 'h') {
			cdi_usage(stdout);
			return 0;
		}
		if (opt == OPT_GROWTH) {
			growth = 1;
			continue;
		}
		if (opt == OPT_WAIT && !optarg) { /* bare --wait: 60 s */
			wait = "60s";
			continue;
		}
		if (opt == 'l' || opt == OPT_GUARANTEE) {
			int bad =
			    opt == 'l'
			        ? add_spec(&lim, "--limit", optarg, spec_text, sizeof spec_text)
			        : add_spec(&gua, "--guarantee", optarg, gua_text, sizeof gua_text);
			if (bad)
				return VR_EXIT_ERROR;
			continue;
		}
		if (string_option(opt, optarg, opts, VR_ARRAY_LEN(opts)) < 0)
			return VR_EXIT_ERROR;
	}
	if (opt == '?')
		return cli_option_error("cdi generate", opt, word);
	if (optind < argc)
		return cli_usage_error("cdi generate", "unexpected argument '%s'", argv[optind]);
	if (!spec_text[0]) {
		fprintf(stderr, "vramctl: cdi generate: --limit SPEC is required\n");
		return VR_EXIT_ERROR;
	}
	/* The container's devices are not known here: the guarantee is checked
	 * against the cap item by item (the library lowers it to the cap). */
	char gerr[300];
	if (gua_text[0] && vr_launch_guarantee_check(&lim, &gua, NULL, -1, gerr, sizeof gerr) < 0) {
		fprintf(stderr, "vramctl: --guarantee: %s\n", gerr);
		return VR_EXIT_ERROR;
	}
	if (vr_launch_small_cap(&lim, getenv(VR_ENV_COUNT), gerr, sizeof gerr))
		fprintf(stderr, "vramctl: --limit: %s\n", gerr);
	if (name_opt)
		snprintf(name, sizeof name, "%s", name_opt);
	else if (name_from_spec(spec_text, name, sizeof name) < 0) {
		fprintf(stderr,
		        "vramctl: --limit '%s' makes no CDI device name; give --name NAME\n",
		        spec_text);
		return VR_EXIT_ERROR;
	}
	vr_enforce_parse(enforce_opt, &enforce);
	struct spec s = {
	    /* CDI allows names starting with a digit from 0.5.0 on. */
	    .version = name[0] >= '0' && name[0] <= '9' ? "0.5.0" : "0.3.0",
	    .name = name,
	};
	if ((enforce & VR_ENFORCE_DRIVER) && driver_env(&lim, &gua, &s) < 0)
		return VR_EXIT_ERROR;
	if (!(enforce & VR_ENFORCE_LIBRARY))
		return write_spec(&s, format, output);
	char liberr[2 * PATH_MAX + 128];
	if (cli_find_library(lib, sizeof lib, liberr, sizeof liberr) < 0) {
		fprintf(stderr, "vramctl: %s\n", liberr);
		return VR_EXIT_ERROR;
	}
	char *slash = strrchr(lib, '/');
	snprintf(preload, sizeof preload, "%.*s/" PRELOAD_NAME, (int)(slash - lib), lib);
	if (check_preload(preload) < 0 || books_dir(books_opt, books, sizeof books) < 0)
		return VR_EXIT_ERROR;

	s.mounts[0] = (struct mount){lib, CONTAINER_LIB, "ro"};
	s.mounts[1] = (struct mount){preload, "/etc/ld.so.preload", "ro"};
	s.mounts[2] = (struct mount){books, books, "rw"};
	s.nmounts = 3;
	if (gua_text[0] && strcmp(books, VR_DEVBOOK_DEFAULT_DIR) != 0) {
		struct stat st;
		s.mounts[s.nmounts++] =
		    (struct mount){VR_DEVBOOK_DEFAULT_DIR, VR_DEVBOOK_DEFAULT_DIR, "ro"};
		if (stat(VR_DEVBOOK_DEFAULT_DIR, &st) != 0)
			fprintf(
			    stderr,
			    "vramctl: note: %s is not here yet: containers with this spec start "
			    "once it is (the guard service's socket unit makes it: systemctl "
			    "enable --now vramctl-guard.socket)\n",
			    VR_DEVBOOK_DEFAULT_DIR);
	}
	/* Parking: the library starts vramctl-checkpoint from beside
	 * itself; its host budget is a quarter of this host's available
	 * memory now (the spill budget's auto). */
	char helper[PATH_MAX];
	uint64_t park_budget = 0;
	if (park) {
		char perr[200];
		if (cli_find_helper("vramctl-checkpoint", helper, sizeof helper) < 0) {
			fprintf(stderr, "vramctl: --park-idle: vramctl-checkpoint is not installed "
			                "beside vramctl (make, or the package)\n");
			return VR_EXIT_ERROR;
		}
		if (vr_parse_spill("auto", &park_budget, perr, sizeof perr) < 0) {
			fprintf(stderr, "vramctl: --park-idle: %s\n", perr);
			return VR_EXIT_ERROR;
		}
		s.mounts[s.nmounts++] = (struct mount){helper, CONTAINER_HELPER, "ro"};
	}
	struct vr_contract c = {
	    .limit = spec_text,
	    .guarantee = gua_text[0] ? gua_text : NULL,
	    .group = group,
	    .registry_dir = books,
	    .growth = growth,
	    .wait = wait,
	    .park_idle = park,
	    .park_budget = park_budget,
	    .lib = CONTAINER_LIB,
	};
	char err[300], contract[PATH_MAX];
	if (vr_contract_apply(&c, spec_env, &s, err, sizeof err) < 0) {
		fprintf(stderr, "vramctl: %s\n", err);
		return VR_EXIT_ERROR;
	}
	if (write_contract(contracts_opt, name, &s, contract, sizeof contract) < 0)
		return VR_EXIT_ERROR;
	s.mounts[s.nmounts++] = (struct mount){contract, VR_CONTRACT_FILE, "ro"};
	return write_spec(&s, format, output);
}

int cmd_cdi(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("cdi", "no subcommand given (generate)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		cdi_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "generate"))
		return cdi_generate(argc - 1, argv + 1);
	return cli_usage_error("cdi", "unknown subcommand '%s' (generate)", argv[1]);
}
