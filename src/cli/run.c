/*
 * run.c - `vramctl run [--limit SPEC]... [--growth] [--group NAME] [--] COMMAND [ARG...]`
 *
 * The CLI re-implements no policy: it checks the cap the user typed against
 * the devices the command will see, writes the environment contract
 * (contract.h) and LD_PRELOAD for the child, keeps the group's books alive for
 * the run by being a member itself, and removes them when a run that created
 * them ends. The injected library does the enforcing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/run.h"
#include "common/compiler.h"
#include "common/contract.h"
#include "common/size.h"
#include "registry/registry.h"
#include "vramctl/registry.h"

#define VR_ENV_LIBRARY "VRAMCTL_LIBRARY"
#define LIB_NAME       "libvramctl.so"
#define GROUP_NAME_MAX 64

static void run_usage(FILE *f)
{
	fprintf(f,
	        "usage: vramctl run [--limit SPEC]... [--growth] [--group NAME] [--] COMMAND "
	        "[ARG...]\n"
	        "\n"
	        "Runs COMMAND, and every process it starts, under a GPU memory cap.\n"
	        "\n"
	        "  -l, --limit SPEC  the cap: SIZE or PCT%% for every device, or DEV=SIZE|PCT%%\n"
	        "                    for one (DEV: the program's device index or a GPU UUID);\n"
	        "                    comma-separated or repeated: --limit 0=4G,1=50%%\n"
	        "                    SIZE units: B, K, M, G, T (also KB/KiB...), powers of 1024\n"
	        "  --growth          frameworks that preallocate (TensorFlow, JAX) grow on\n"
	        "                    demand instead\n"
	        "  --group NAME      share one cap per device with every process run with the\n"
	        "                    same NAME (default: a new group for this run)\n"
	        "  -h, --help        this text\n"
	        "\n"
	        "Exit status: COMMAND's own; 125 vramctl's error; 126 not executable;\n"
	        "127 not found; 128+N if COMMAND died of signal N. See vramctl-run(1).\n");
}

/* "--opt VALUE" or "--opt=VALUE"; advances *i past what it used. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "vramctl: %s needs a value\n", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

/*
 * Adds the items of one --limit to *all. The size grammar's own messages name
 * the bad item; a message that starts by repeating the whole argument loses
 * that repetition, since the argument is already quoted in front.
 */
static int add_limit(struct vr_limits *all, const char *arg)
{
	struct vr_limits one;
	char err[256], prefix[128];
	const char *msg = err;

	if (vr_parse_limits(arg, &one, err, sizeof(err)) < 0) {
		snprintf(prefix, sizeof(prefix), "'%s': ", arg);
		if (!strncmp(err, prefix, strlen(prefix)))
			msg = err + strlen(prefix);
		fprintf(stderr, "vramctl: --limit '%s': %s\n", arg, msg);
		return -1;
	}
	for (int i = 0; i < one.count; i++) {
		for (int j = 0; j < all->count; j++) {
			if (strcasecmp(all->item[j].dev, one.item[i].dev) != 0)
				continue;
			if (one.item[i].dev[0])
				fprintf(stderr, "vramctl: --limit '%s': device '%s' given twice\n",
				        arg, one.item[i].dev);
			else
				fprintf(stderr,
				        "vramctl: --limit '%s': the cap for every device given "
				        "twice\n",
				        arg);
			return -1;
		}
		if (all->count == VR_MAX_LIMITS) {
			fprintf(stderr, "vramctl: --limit: too many items (at most %d)\n",
			        VR_MAX_LIMITS);
			return -1;
		}
		all->item[all->count++] = one.item[i];
	}
	return 0;
}

static int is_index(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* The device a DEV text names, or -1. MIG-... UUIDs match by their bytes. */
static int find_device(const char *dev, const struct cli_dev *devs, int ndev)
{
	unsigned char raw[16];
	const char *hex = dev;

	if (is_index(dev)) {
		long v = strtol(dev, NULL, 10);

		return v < ndev ? (int)v : -1;
	}
	if (!strncasecmp(hex, "MIG-", 4))
		hex += 4;
	if (vr_parse_uuid(hex, raw) < 0)
		return -1;
	for (int i = 0; i < ndev; i++)
		if (!memcmp(devs[i].raw, raw, sizeof(raw)))
			return i;
	return -1;
}

/*
 * Checks every DEV against the devices and writes the normalised spec:
 * amounts in bytes or percent, every DEV as the device's UUID, so that the
 * cap stays on the same physical GPU for processes that see another
 * CUDA_VISIBLE_DEVICES (a launcher giving each rank one GPU). ndev < 0: no
 * driver, and then a DEV item cannot be checked and is refused.
 */
static int normalise(const struct vr_limits *l, const struct cli_dev *devs, int ndev,
                     const char *why_no_driver, char *out, size_t outlen)
{
	int owner[CLI_MAX_DEVICES];
	size_t used = 0;

	for (int i = 0; i < CLI_MAX_DEVICES; i++)
		owner[i] = -1;
	out[0] = '\0';
	for (int i = 0; i < l->count; i++) {
		const struct vr_limit *it = &l->item[i];
		char amount[64];
		int d, n;

		vr_format_amount(it, amount, sizeof(amount));
		if (!it->dev[0]) {
			n = snprintf(out + used, outlen - used, "%s%s", used ? "," : "", amount);
		} else {
			if (ndev < 0) {
				fprintf(
				    stderr,
				    "vramctl: --limit: cannot check device '%s': %s\n"
				    "vramctl: give a cap for every device (e.g. --limit 4G), or "
				    "make the driver loadable (LD_LIBRARY_PATH, VRAMCTL_DRIVER)\n",
				    it->dev, why_no_driver);
				return -1;
			}
			d = find_device(it->dev, devs, ndev);
			if (d < 0) {
				if (ndev == 0)
					fprintf(stderr,
					        "vramctl: --limit: unknown device '%s' (the driver "
					        "reports no device)\n",
					        it->dev);
				else
					fprintf(stderr,
					        "vramctl: --limit: unknown device '%s' (devices: "
					        "0..%d; 'vramctl status' lists their UUIDs)\n",
					        it->dev, ndev - 1);
				return -1;
			}
			if (owner[d] >= 0) {
				fprintf(stderr,
				        "vramctl: --limit: device %d named twice ('%s' and '%s')\n",
				        d, l->item[owner[d]].dev, it->dev);
				return -1;
			}
			owner[d] = i;
			n = snprintf(out + used, outlen - used, "%s%s=%s", used ? "," : "",
			             devs[d].uuid, amount);
		}
		if (n < 0 || (size_t)n >= outlen - used) {
			fprintf(stderr, "vramctl: --limit: the spec is too long\n");
			return -1;
		}
		used += (size_t)n;
	}
	return 0;
}

static int valid_group(const char *g)
{
	size_t n = strlen(g);

	if (n == 0 || n > GROUP_NAME_MAX)
		return 0;
	for (; *g; g++)
		if (!((*g >= 'a' && *g <= 'z') || (*g >= 'A' && *g <= 'Z') ||
		      (*g >= '0' && *g <= '9') || *g == '.' || *g == '_' || *g == '-'))
			return 0;
	return 1;
}

static void unique_group(char *buf, size_t len)
{
	unsigned int r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* No entropy yet: the PID and the clock still make it unique
		 * among live runs, which is what matters. */
		r = (unsigned int)getpid() * 2654435761u ^ (unsigned int)time(NULL);
	}
	snprintf(buf, len, "run-%d-%08x", (int)getpid(), r);
}

static int file_exists(const char *path)
{
	return access(path, R_OK) == 0;
}

/*
 * The injected library: $VRAMCTL_LIBRARY, else beside the vramctl binary (a
 * build tree), else ../lib/vramctl/ from it (an installed layout).
 */
static int find_library(char *out, size_t len)
{
	const char *env = getenv(VR_ENV_LIBRARY);
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (!realpath(env, out) || strlen(out) >= len) {
			fprintf(stderr, "vramctl: %s='%s': %s\n", VR_ENV_LIBRARY, env,
			        strerror(errno ? errno : ENAMETOOLONG));
			return -1;
		}
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "vramctl: cannot find its own path: %s (set %s)\n", strerror(errno),
		        VR_ENV_LIBRARY);
		return -1;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/%s", exe, LIB_NAME);
	if (!file_exists(cand))
		snprintf(cand, sizeof(cand), "%s/../lib/vramctl/%s", exe, LIB_NAME);
	if (!file_exists(cand) || !realpath(cand, out)) {
		fprintf(stderr,
		        "vramctl: cannot find %s (looked in %s and %s/../lib/vramctl); set %s\n",
		        LIB_NAME, exe, exe, VR_ENV_LIBRARY);
		return -1;
	}
	return 0;
}

/*
 * LD_PRELOAD for the child: the library appended to what the user has, never
 * replacing it, and not added when a libvramctl.so is already there (a
 * nested run): the library loaded twice would act once anyway.
 */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *copy, *tok, *save = NULL, *val;
	int present = 0;
	size_t need;

	if (strpbrk(lib, " :\t")) {
		fprintf(stderr,
		        "vramctl: the library path '%s' cannot go in LD_PRELOAD (it holds "
		        "a space or ':')\n",
		        lib);
		return -1;
	}
	if (old && *old) {
		copy = strdup(old);
		if (!copy)
			return -1;
		for (tok = strtok_r(copy, " :\t", &save); tok;
		     tok = strtok_r(NULL, " :\t", &save)) {
			const char *base = strrchr(tok, '/');

			base = base ? base + 1 : tok;
			if (!strcmp(tok, lib) || !strcmp(base, LIB_NAME))
				present = 1;
		}
		free(copy);
	}
	if (present)
		return 0;
	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1);
	need = strlen(old) + strlen(lib) + 2;
	val = malloc(need);
	if (!val)
		return -1;
	snprintf(val, need, "%s:%s", old, lib);
	if (setenv("LD_PRELOAD", val, 1) < 0) {
		free(val);
		return -1;
	}
	free(val);
	return 0;
}

/* Sets a framework's switch unless the user chose a value already. */
static void default_env(const char *name, const char *value)
{
	if (!getenv(name))
		setenv(name, value, 1);
}

/*
 * The cap spec a group was created with, from the registry's read-only view;
 * 0 and the text in buf, or -1 when it cannot be read.
 */
static int group_spec(const char *group, char *buf, size_t len)
{
	struct vramctl_snapshot *snap = NULL;
	int found = -1;

	if (vramctl_snapshot_take(NULL, &snap) < 0 || !snap)
		return -1;
	for (int i = 0; i < snap->ngroups; i++) {
		if (!strcmp(snap->groups[i].name, group) && snap->groups[i].limit_spec[0]) {
			snprintf(buf, len, "%s", snap->groups[i].limit_spec);
			found = 0;
			break;
		}
	}
	vramctl_snapshot_free(snap);
	return found;
}

/*
 * Joins the group for the run and fixes the caps on every device this run
 * can see (the first member fixes a device's cap). When the group already
 * had a different cap, says so: the group's cap, fixed by its creator,
 * applies. Returns the membership or NULL after a message.
 */
static vr_member *join_group(const char *group, const char *spec, int growth, int fresh,
                             const struct vr_limits *lim, const struct cli_dev *devs, int ndev)
{
	struct vr_join_opts o = {
	    .dir = NULL, .group = group, .limit_spec = spec, .growth = growth, .fresh = fresh};
	vr_member *m = NULL;
	char err[256];
	int differs = 0, rc;

	rc = vr_join(&o, &m, &differs, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "vramctl: cannot join group '%s': %s\n", group, err);
		return NULL;
	}
	for (int i = 0; i < ndev; i++) {
		uint64_t want = UINT64_MAX, have = UINT64_MAX;
		char a[32], b[32];

		if (!vr_limits_cap_for(lim, i, devs[i].uuid, devs[i].total, &want))
			want = UINT64_MAX;
		rc = vr_device(m, devs[i].raw, want, &have);
		if (rc < 0) {
			fprintf(stderr, "vramctl: group '%s': cannot record device %d: %s\n", group,
			        i, strerror(-rc));
			vr_leave(m);
			return NULL;
		}
		if (have != want) {
			differs = 1;
			fprintf(stderr,
			        "vramctl: group '%s' already has a different cap on GPU %d: %s, "
			        "not %s; the group's cap applies\n",
			        group, i,
			        have == UINT64_MAX ? "none" : vr_format_size(have, a, sizeof(a)),
			        want == UINT64_MAX ? "none" : vr_format_size(want, b, sizeof(b)));
		}
	}
	if (differs) {
		char theirs[256];

		/* The children get the group's own spec: it is the cap that
		 * applies, and they then have nothing to warn about again. */
		if (group_spec(group, theirs, sizeof(theirs)) == 0) {
			if (ndev <= 0)
				fprintf(stderr,
				        "vramctl: group '%s' was created with the cap '%s', not "
				        "'%s'; the group's cap applies\n",
				        group, theirs, spec);
			setenv(VR_ENV_LIMIT, theirs, 1);
		} else if (ndev <= 0) {
			fprintf(stderr,
			        "vramctl: group '%s' was created with a different cap than '%s'; "
			        "the group's cap applies\n",
			        group, spec);
		}
	}
	return m;
}

int cmd_run(int argc, char **argv)
{
	struct vr_limits lim;
	struct cli_dev devs[CLI_MAX_DEVICES];
	char spec[4096], group[GROUP_NAME_MAX + 1], lib[PATH_MAX], why[256] = "";
	const char *group_opt = NULL, *value;
	int growth = 0, have_limit = 0, ndev = -1, i, rc;
	vr_member *m = NULL;

	memset(&lim, 0, sizeof(lim));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			run_usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--growth")) {
			growth = 1;
			continue;
		}
		if ((rc = opt_value(argc, argv, &i, "--limit", &value)) != 0 ||
		    (rc = opt_value(argc, argv, &i, "-l", &value)) != 0) {
			if (rc < 0 || add_limit(&lim, value) < 0)
				return VR_EXIT_ERROR;
			have_limit = 1;
			continue;
		}
		if ((rc = opt_value(argc, argv, &i, "--group", &value)) != 0) {
			if (rc < 0)
				return VR_EXIT_ERROR;
			if (!valid_group(value)) {
				fprintf(stderr,
				        "vramctl: --group '%s': a group name is 1 to %d of "
				        "A-Z a-z 0-9 . _ -\n",
				        value, GROUP_NAME_MAX);
				return VR_EXIT_ERROR;
			}
			group_opt = value;
			continue;
		}
		fprintf(stderr, "vramctl: run: unknown option '%s' ('vramctl run --help')\n", a);
		return VR_EXIT_ERROR;
	}
	if (i >= argc) {
		fprintf(stderr, "vramctl: run: no command given\n");
		run_usage(stderr);
		return VR_EXIT_ERROR;
	}
	if (group_opt && !have_limit) {
		fprintf(stderr,
		        "vramctl: --group '%s' needs --limit: give the group's cap (its creator's "
		        "cap applies if it differs)\n",
		        group_opt);
		return VR_EXIT_ERROR;
	}

	if (have_limit) {
		ndev = cli_devices(devs, CLI_MAX_DEVICES, why, sizeof(why));
		if (normalise(&lim, devs, ndev, why, spec, sizeof(spec)) < 0)
			return VR_EXIT_ERROR;
	}
	if (find_library(lib, sizeof(lib)) < 0)
		return VR_EXIT_ERROR;

	if (have_limit) {
		if (group_opt)
			snprintf(group, sizeof(group), "%s", group_opt);
		else
			unique_group(group, sizeof(group));
		/* join_group replaces the cap with the group's own if it differs. */
		setenv(VR_ENV_LIMIT, spec, 1);
		setenv(VR_ENV_GROUP, group, 1);
		m = join_group(group, spec, growth, !group_opt, &lim, devs, ndev < 0 ? 0 : ndev);
		if (!m)
			return VR_EXIT_ERROR;
	}
	if (growth) {
		setenv(VR_ENV_GROWTH, "1", 1);
		default_env("TF_FORCE_GPU_ALLOW_GROWTH", "true");
		default_env("XLA_PYTHON_CLIENT_PREALLOCATE", "false");
	}
	if (set_preload(lib) < 0) {
		fprintf(stderr, "vramctl: cannot set LD_PRELOAD\n");
		rc = VR_EXIT_ERROR;
	} else {
		rc = cli_spawn((const char *const *)(argv + i));
	}

	if (m) {
		vr_leave(m);
		/* A run's own group ends with it; a named group may have other
		 * members, and its next fresh join resets it when none is alive. */
		if (!group_opt) {
			char dir[PATH_MAX];
			int r = vr_default_dir(dir, sizeof(dir));

			if (r >= 0)
				r = vr_group_remove(dir, group);

			if (r < 0 && r != -ENOENT)
				fprintf(stderr, "vramctl: cannot remove group '%s': %s\n", group,
				        strerror(-r));
		}
	}
	return rc;
}
