/*
 * limit.c - `vramctl limit TARGET SPEC`: changes the cap of a running group
 * (registry/caps.h). TARGET is a group's name, or the PID of a capped
 * process (its group: the books it has open). SPEC is --limit's grammar;
 * DEV is a device as the driver numbers it in this shell, or its UUID. An
 * amount for every device changes each device the group has; a DEV names
 * one, which the group gets if it has not used it yet. The new spec,
 * written with UUIDs, is the group's: devices its members use later take
 * their caps from it (hook/books.c).
 *
 * Only the group's owner or root may change it; root acts as the owner
 * (effective IDs) to open the owner's books. The site's maximum holds.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/limit_guarantee.h"
#include "cli/options.h"
#include "cli/site.h"
#include "common/contract.h"
#include "common/exit.h"
#include "common/siteconf.h"
#include "common/size.h"
#include "registry/caps.h"
#include "registry/registry.h"

static void limit_usage(FILE *f)
{
	fprintf(f, "usage: vramctl limit [--registry DIR] [--guarantee SPEC] TARGET [SPEC]\n"
	           "\n"
	           "Changes the cap of a running group: TARGET is the group's name, or the PID\n"
	           "of a capped process (its group). SPEC is --limit's: '12G', '50%%',\n"
	           "'0=8G,1=50%%' (DEV as the driver numbers it here, or a UUID: a GPU the\n"
	           "group has not used is given to it by UUID only). Raising is\n"
	           "usable at once; lowering below what the group holds frees nothing: its new\n"
	           "allocations are refused until it is under the new cap. A cap lowered below\n"
	           "the group's guarantee lowers the guarantee with it.\n"
	           "\n"
	           "  --guarantee SPEC    the group's guarantee (it must hold one already): a\n"
	           "                      raise only where it fits beside the others'\n"
	           "  --registry DIR      where the group's books are (default: yours;\n"
	           "                      --registry-dir DIR: the same)\n"
	           "  -h, --help          this help\n");
}

/* The group's door among a process's open files: 0 with dir and group
 * set, or -1 after a message. */
static int door_of_pid(const char *pidtext, char *dir, size_t dlen, char *group, size_t glen)
{
	char path[64], link[PATH_MAX];
	snprintf(path, sizeof path, "/proc/%s/fd", pidtext);
	DIR *d = opendir(path);
	if (!d && errno == ENOENT) {
		fprintf(stderr, "vramctl: limit: no process %s\n", pidtext);
		return -1;
	}
	if (!d) {
		fprintf(stderr, "vramctl: limit: cannot see process %s's files: %s%s\n", pidtext,
		        strerror(errno),
		        errno == EACCES ? " (another user's process: only its owner or root may "
		                          "change its cap)"
		                        : "");
		return -1;
	}
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char fd[PATH_MAX];
		snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
		ssize_t n = readlink(fd, link, sizeof link - 1);
		if (n <= 4)
			continue;
		link[n] = '\0';
		/* The door, or the name members keep it open under (door.c:
		 * ".<group>.vrg.keep", which outlives a removed door). */
		char *slash = strrchr(link, '/'), *name = slash ? slash + 1 : link;
		size_t nl = strlen(name);
		if (link[0] != '/')
			continue;
		if (name[0] == '.' && nl > 10 && !strcmp(name + nl - 9, ".vrg.keep")) {
			name++;
			nl -= 10;
		} else if (nl > 4 && !strcmp(name + nl - 4, ".vrg")) {
			nl -= 4;
		} else {
			continue;
		}
		name[nl] = '\0';
		*slash = '\0';
		snprintf(dir, dlen, "%s", slash == link ? "/" : link);
		snprintf(group, glen, "%s", name);
		found = 1;
	}
	closedir(d);
	if (!found)
		fprintf(stderr,
		        "vramctl: limit: process %s has no group's books open: it is not capped by "
		        "vramctl, or has not used a GPU yet\n",
		        pidtext);
	return found ? 0 : -1;
}

/* Root acts as the books' owner; anyone else must be it. 0, or -1 after
 * a message. */
static int become_owner(const char *dir, const char *group)
{
	char door[PATH_MAX];
	struct stat st;
	int len = snprintf(door, sizeof door, "%s/%s.vrg", dir, group);
	if (len < 0 || (size_t)len >= sizeof door)
		errno = ENAMETOOLONG;
	if (len < 0 || (size_t)len >= sizeof door || stat(door, &st) != 0) {
		if (errno == ENOENT)
			fprintf(stderr, "vramctl: limit: no group '%s' in %s\n", group, dir);
		else
			fprintf(stderr, "vramctl: limit: cannot see group '%s' in %s: %s%s\n",
			        group, dir, strerror(errno),
			        errno == EACCES ? " (only its owner or root may change its cap)"
			                        : "");
		return -1;
	}
	if (getuid() == 0 && st.st_uid != 0) {
		if (setegid(st.st_gid) != 0 || seteuid(st.st_uid) != 0) {
			fprintf(stderr, "vramctl: limit: cannot act as uid %u: %s\n",
			        (unsigned)st.st_uid, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (getuid() != 0 && st.st_uid != getuid()) {
		fprintf(stderr,
		        "vramctl: limit: group '%s' belongs to uid %u: only its owner or root may "
		        "change its cap\n",
		        group, (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

static const struct vr_launch_dev *dev_by_uuid(const struct vr_launch_dev *devs, int ndev,
                                               const unsigned char *uuid)
{
	for (int i = 0; i < ndev; i++)
		if (memcmp(devs[i].raw, uuid, VR_UUID_LEN) == 0)
			return &devs[i];
	return NULL;
}

/* Does any item name the device (not an amount for every device)? */
static int named(const struct vr_limits *l, const struct vr_launch_dev *dv)
{
	for (int k = 0; k < l->count; k++)
		if (l->item[k].dev[0] && vr_limit_names(&l->item[k], -1, dv->raw))
			return 1;
	return 0;
}

/* The new cap of one device into *out, checked against the site's
 * maximum. 1: one applies, 0: the spec leaves it as it is, -1 after a
 * message. */
static int new_cap(const struct vr_limits *l, const unsigned char *uuid,
                   const struct vr_launch_dev *dv, uint64_t *out)
{
	char text[64], a[32], b[32];
	vr_format_uuid(uuid, text, sizeof text);
	int pct = 0;
	for (int k = 0; k < l->count; k++)
		if (!l->item[k].dev[0] || vr_limit_names(&l->item[k], -1, uuid))
			pct |= l->item[k].is_percent;
	if (pct && !dv) {
		fprintf(stderr,
		        "vramctl: limit: %s is not visible here: give its cap as a size, not a "
		        "percentage\n",
		        text);
		return -1;
	}
	if (!vr_limits_cap_for(l, -1, text, dv ? dv->total : 0, out))
		return 0;
	if (!dv && vr_site_max_is_share(vr_site_get(), -1, text)) {
		/* Its size is the driver's to tell, and the driver here does not
		 * show it: a share of an unknown size is no maximum at all. */
		fprintf(stderr,
		        "vramctl: limit: %s is not visible here (CUDA_VISIBLE_DEVICES), and the "
		        "site's maximum for it is a share of its memory (vramctl.conf(5)): change "
		        "its cap where it is visible; nothing changed\n",
		        text);
		return -1;
	}
	uint64_t max;
	if (vr_site_max_for(vr_site_get(), dv ? dv->index : -1, text, dv ? dv->total : 0, &max) &&
	    *out > max) {
		fprintf(stderr,
		        "vramctl: limit: %s: %s is above the site's maximum, %s (vramctl.conf(5)); "
		        "nothing changed\n",
		        text, vr_format_size(*out, a, sizeof a), vr_format_size(max, b, sizeof b));
		return -1;
	}
	return 1;
}

/* What changed, a line per device; a cap above the card (as the driver
 * here tells its size) is said to be bounded by it, as vramctl run says. */
static void say(const char *group, const struct vr_cap_new *c, int n, const uint64_t *held,
                const struct vr_launch_dev *devs, int ndev)
{
	for (int i = 0; i < n; i++) {
		char text[64], a[32], b[32], h[32];
		const struct vr_launch_dev *dv = dev_by_uuid(devs, ndev, c[i].uuid);
		if (dv && dv->total && c[i].cap != UINT64_MAX && c[i].cap > dv->total) {
			int dg = vr_size_digits((uint64_t[]){c[i].cap, dv->total}, 2, 0);
			fprintf(
			    stderr,
			    "vramctl: limit: %s: the cap (%s) is more than the card holds (%s): "
			    "the card's size is what bounds the group\n",
			    dv->uuid, vr_format_size_digits(c[i].cap, dg, a, sizeof a),
			    vr_format_size_digits(dv->total, dg, b, sizeof b));
		}
		vr_format_uuid(c[i].uuid, text, sizeof text);
		if (c[i].added) {
			printf("group %s: %s: cap %s (a device it had not used)\n", group, text,
			       vr_format_size(c[i].cap, b, sizeof b));
			continue;
		}
		if (c[i].old == c[i].cap) {
			printf("group %s: %s: cap %s, unchanged\n", group, text,
			       vr_format_size(c[i].cap, b, sizeof b));
			continue;
		}
		printf("group %s: %s: cap %s -> %s", group, text,
		       c[i].old == UINT64_MAX ? "none" : vr_format_size(c[i].old, a, sizeof a),
		       vr_format_size(c[i].cap, b, sizeof b));
		if (held[i] > c[i].cap)
			printf(" (it holds %s: over the new cap; its new allocations are refused "
			       "until it is under it)",
			       vr_format_size(held[i], h, sizeof h));
		printf("\n");
	}
}

/* Joins the live group as a launcher, sets the caps (lim NULL: kept) and
 * the guarantees (gua NULL: kept, lowered to a cap below them), leaves. */
static int apply(const char *dir, const char *group, const struct vr_limits *lim, const char *spec,
                 int by_index, const struct vr_limits *gua, const struct vr_launch_dev *devs,
                 int ndev)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .launcher = 1, .existing = 1};
	vr_member *m = NULL;
	char err[512] = "";
	int rc = vr_join(&o, &m, NULL, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "vramctl: limit: %s\n", err[0] ? err : strerror(-rc));
		return VR_EXIT_ERROR;
	}
	unsigned char uuids[VR_MAX_DEVICES][VR_UUID_LEN];
	uint64_t caps[VR_MAX_DEVICES], held[VR_MAX_DEVICES];
	struct vr_cap_new c[VR_MAX_DEVICES];
	int nd = vr_caps_devices(m, uuids, caps, held, VR_MAX_DEVICES), n = 0;
	for (int i = 0; i < nd; i++) {
		const struct vr_launch_dev *dv = dev_by_uuid(devs, ndev, uuids[i]);
		uint64_t cap = caps[i];
		int r = lim ? new_cap(lim, uuids[i], dv, &cap) : 1;
		if (r < 0)
			goto fail;
		if (r == 0)
			continue;
		memcpy(c[n].uuid, uuids[i], VR_UUID_LEN);
		c[n].cap = cap;
		held[n] = held[i];
		n++;
	}
	/* Devices the spec names that the group has not used: added, when
	 * named by UUID. An index is this shell's numbering, which may not be
	 * the members' (CUDA_VISIBLE_DEVICES): a device none of them uses is
	 * not guessed at (`limit g 0=4G` under CUDA_VISIBLE_DEVICES=1
	 * capped a GPU the members could not see, and said nothing). */
	for (int i = 0; lim && i < ndev && n < VR_MAX_DEVICES; i++) {
		uint64_t cap;
		int r;
		if (!named(lim, &devs[i]))
			continue;
		int have = 0;
		for (int k = 0; k < nd; k++)
			have |= memcmp(uuids[k], devs[i].raw, VR_UUID_LEN) == 0;
		if (have)
			continue;
		if (by_index) {
			const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
			fprintf(
			    stderr,
			    "vramctl: limit: GPU %d as this shell numbers it%s%s%s is %s, which no "
			    "member of group %s uses: its members may number GPUs otherwise "
			    "(CUDA_VISIBLE_DEVICES); give the device by its UUID (vramctl status "
			    "lists the group's) to give the group a new one; nothing changed\n",
			    devs[i].index, cvd ? " (CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "",
			    cvd ? ")" : "", devs[i].uuid, group);
			goto fail;
		}
		if ((r = new_cap(lim, devs[i].raw, &devs[i], &cap)) < 0)
			goto fail;
		memcpy(c[n].uuid, devs[i].raw, VR_UUID_LEN);
		c[n].cap = cap;
		held[n] = 0;
		n++;
	}
	if (n == 0) {
		fprintf(stderr,
		        "vramctl: limit: '%s' names no device of group %s; nothing changed\n", spec,
		        group);
		goto fail;
	}
	/* The guarantees first (a raise may be refused: then nothing changed),
	 * each within its device's new cap. */
	struct cli_regrant rg;
	if (cli_regrant(group, m, (uint32_t)geteuid(), c, n, gua, devs, ndev, &rg) != 0)
		goto fail;
	/* The group keeps the spec for the devices it uses later: only whole. */
	int keep = !lim || strlen(spec) < VR_GROUP_SPEC_MAX;
	rc = lim ? vr_caps_set(m, c, n, keep ? spec : NULL, err, sizeof err) : 0;
	vr_leave(m);
	if (rc < 0) {
		cli_regrant_undo(&rg);
		fprintf(stderr, "vramctl: limit: group %s: %s; nothing changed\n", group, err);
		return VR_EXIT_ERROR;
	}
	if (lim)
		say(group, c, n, held, devs, ndev);
	cli_regrant_say(&rg);
	if (!keep)
		fprintf(stderr,
		        "vramctl: limit: '%s' is too long for the group to keep: a device it uses "
		        "later takes the cap its members started with\n",
		        spec);
	return VR_EXIT_OK;
fail:
	vr_leave(m);
	return VR_EXIT_ERROR;
}

/* A spec with its DEVs as UUIDs (the group's members may number devices
 * otherwise), parsed again into l. 0, or -1 after a message. */
static int normalise(struct vr_limits *l, const struct vr_launch_dev *devs, int ndev,
                     const char *why, char *spec, size_t len)
{
	char err[512];
	if (vr_launch_normalise(l, devs, ndev, why, spec, len, err, sizeof err) < 0 ||
	    vr_parse_limits(spec, l, err, sizeof err) < 0) {
		fprintf(stderr, "vramctl: limit: %s\n", err);
		return -1;
	}
	return 0;
}

int cmd_limit(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"registry", required_argument, NULL, 'd'},
	    {"registry-dir", required_argument, NULL, 'd'}, /* its name before --registry */
	    {"guarantee", required_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *word = "", *dir_opt = NULL, *gua_opt = NULL, *args[2] = {NULL, NULL};
	int c, nargs = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "-:d:g:h", opts, &word)) != -1) {
		if (c == 'h') {
			limit_usage(stdout);
			return VR_EXIT_OK;
		}
		if (c == 'd')
			dir_opt = optarg;
		else if (c == 'g')
			gua_opt = optarg;
		else if (c == ':' || c == '?')
			return cli_option_error("limit", c, word);
		else if (nargs < 2)
			args[nargs++] = optarg;
		else
			return cli_usage_error("limit", "one TARGET and one SPEC: '%s'", optarg);
	}
	if (optind < argc)
		return cli_usage_error("limit", "unknown option '%s'", argv[optind - 1]);
	if (nargs < 2 && !(nargs == 1 && gua_opt))
		return cli_usage_error("limit", nargs ? "no SPEC given" : "no TARGET given");
	if (cli_site_check("vramctl limit") < 0)
		return VR_EXIT_ERROR;

	struct vr_limits lim, gua;
	char why[256] = "", err[512];
	if (args[1] && vr_parse_limits(args[1], &lim, err, sizeof err) < 0)
		return cli_usage_error("limit", "SPEC: %s", err);
	int by_index = 0; /* an item names a device by this shell's index */
	for (int k = 0; args[1] && k < lim.count; k++)
		by_index |= lim.item[k].dev[0] >= '0' && lim.item[k].dev[0] <= '9';
	/* The group's members count as they do: a small cap is said anyway. */
	if (args[1] && vr_launch_small_cap(&lim, NULL, err, sizeof err))
		fprintf(stderr, "vramctl: limit: %s\n", err);
	if (gua_opt && vr_parse_limits(gua_opt, &gua, err, sizeof err) < 0)
		return cli_usage_error("limit", "--guarantee: %s", err);

	char dir[PATH_MAX], group[VR_GROUP_NAME_MAX + 8];
	const char *t = args[0];
	int is_pid = *t != '\0';
	for (const char *p = t; *p; p++)
		is_pid &= isdigit((unsigned char)*p) != 0;
	if (is_pid && dir_opt)
		return cli_usage_error("limit", "--registry goes with a group's name, not a PID");
	if (is_pid) {
		if (door_of_pid(t, dir, sizeof dir, group, sizeof group) < 0)
			return VR_EXIT_ERROR;
	} else {
		if (vr_group_name_check(t, err, sizeof err) < 0)
			return cli_usage_error("limit", "TARGET: %s", err);
		snprintf(group, sizeof group, "%s", t);
		if (dir_opt)
			snprintf(dir, sizeof dir, "%s", dir_opt);
		else if (vr_default_dir(dir, sizeof dir) < 0) {
			fprintf(stderr, "vramctl: limit: no registry directory\n");
			return VR_EXIT_ERROR;
		}
	}

	/* The devices, for DEVs, percentages and the site's maximum. */
	struct vr_launch_dev devs[VR_MAX_DEVICES];
	int ndev = cli_devices(devs, VR_MAX_DEVICES, why, sizeof why);
	char spec[4096] = "", gspec[4096];
	if (args[1] && normalise(&lim, devs, ndev, why, spec, sizeof spec) < 0)
		return VR_EXIT_ERROR;
	if (gua_opt && normalise(&gua, devs, ndev, why, gspec, sizeof gspec) < 0)
		return VR_EXIT_ERROR;
	if (become_owner(dir, group) < 0)
		return VR_EXIT_ERROR;
	return apply(dir, group, args[1] ? &lim : NULL, spec, by_index, gua_opt ? &gua : NULL, devs,
	             ndev < 0 ? 0 : ndev);
}
