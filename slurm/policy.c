/*
 * policy.c - the Slurm plugin's pure decisions (see policy.h).
 */
#include "slurm/policy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/cgroup2.h"
#include "common/contract.h"
#include "common/enforce.h"
#include "common/size.h"
#include "common/spill.h"
#include "common/text.h"
#include "launch/launch.h"

static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1")) {
		*out = 1;
		return 0;
	}
	if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

int vr_slurm_parse_args(int argc, char *const argv[], struct vr_slurm_conf *conf, char *err,
                        size_t errlen)
{
	struct vr_slurm_conf c;
	struct vr_limits limits;
	char why[256];
	int i;

	memset(&c, 0, sizeof(c));
	strcpy(c.lib, VR_SLURM_DEFAULT_LIB);
	strcpy(c.registry_dir, VR_SLURM_DEFAULT_DIR);
	strcpy(c.cgroup_root, VR_CGROUP2_MOUNT);
	c.allow_optout = 1;
	c.allow_spill = 1;
	c.allow_guarantee = 1;
	c.enforce = VR_ENFORCE_LIBRARY;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);

		if (!eq || klen == 0) {
			vr_seterr(err, errlen, "argument '%s' is not KEY=VALUE", a);
			return -EINVAL;
		}
		if (klen == 3 && !strncmp(a, "lib", 3)) {
			if (v[0] != '/' || vr_text_copy(c.lib, sizeof(c.lib), v)) {
				vr_seterr(err, errlen, "lib=%s: need an absolute path", v);
				return -EINVAL;
			}
		} else if (klen == 7 && !strncmp(a, "default", 7)) {
			if (vr_parse_limits(v, &limits, why, sizeof(why)) ||
			    vr_text_copy(c.default_spec, sizeof(c.default_spec), v)) {
				vr_seterr(err, errlen, "default=%s: %s", v, why);
				return -EINVAL;
			}
		} else if (klen == 15 && !strncmp(a, "bytes_per_shard", 15)) {
			if (vr_parse_size(v, &c.bytes_per_shard, why, sizeof(why))) {
				vr_seterr(err, errlen, "bytes_per_shard=%s: %s", v, why);
				return -EINVAL;
			}
		} else if (klen == 12 && !strncmp(a, "allow_optout", 12)) {
			if (parse_bool(v, &c.allow_optout)) {
				vr_seterr(err, errlen, "allow_optout=%s: use yes or no", v);
				return -EINVAL;
			}
		} else if (klen == 11 && !strncmp(a, "allow_spill", 11)) {
			if (parse_bool(v, &c.allow_spill)) {
				vr_seterr(err, errlen, "allow_spill=%s: use yes or no", v);
				return -EINVAL;
			}
		} else if (klen == 15 && !strncmp(a, "allow_guarantee", 15)) {
			if (parse_bool(v, &c.allow_guarantee)) {
				vr_seterr(err, errlen, "allow_guarantee=%s: use yes or no", v);
				return -EINVAL;
			}
		} else if (klen == 12 && !strncmp(a, "registry_dir", 12)) {
			char probe[VR_SLURM_TEXT_MAX];

			if (v[0] != '/' ||
			    vr_text_copy(c.registry_dir, sizeof(c.registry_dir), v) ||
			    vr_dir_pattern(v, 0, probe, sizeof(probe))) {
				vr_seterr(
				    err, errlen,
				    "registry_dir=%s: need an absolute path (%%u: the job's uid)",
				    v);
				return -EINVAL;
			}
		} else if (klen == 7 && !strncmp(a, "enforce", 7)) {
			if (vr_enforce_parse(v, &c.enforce)) {
				vr_seterr(err, errlen, "enforce=%s: use library, driver or both",
				          v);
				return -EINVAL;
			}
		} else if ((klen == 11 && !strncmp(a, "cgroup_root", 11)) ||
		           (klen == 4 && !strncmp(a, "nvml", 4)) ||
		           (klen == 7 && !strncmp(a, "watcher", 7)) ||
		           (klen == 10 && !strncmp(a, "device_dir", 10))) {
			char *dst = klen == 4    ? c.nvml
			            : klen == 7  ? c.watcher
			            : klen == 10 ? c.device_dir
			                         : c.cgroup_root;
			if (klen == 7 && !strcmp(v, "none")) {
				snprintf(c.watcher, sizeof(c.watcher), "none");
				continue;
			}
			if (v[0] != '/' || vr_text_copy(dst, VR_SLURM_TEXT_MAX, v)) {
				vr_seterr(err, errlen, "%.*s=%s: need an absolute path", (int)klen,
				          a, v);
				return -EINVAL;
			}
		} else {
			vr_seterr(
			    err, errlen,
			    "unknown argument '%s' (known: lib, default, bytes_per_shard, "
			    "allow_optout, allow_spill, allow_guarantee, registry_dir, enforce, "
			    "cgroup_root, nvml, watcher, device_dir)",
			    a);
			return -EINVAL;
		}
	}
	/* The vramctl program of the prefix the library is under
	 * (/usr/lib/<triplet>/vramctl/libvramctl.so: /usr/bin/vramctl). */
	const char *lib = strstr(c.lib, "/lib/");
	if (!c.watcher[0] && lib)
		snprintf(c.watcher, sizeof(c.watcher), "%.*s/bin/vramctl", (int)(lib - c.lib),
		         c.lib);
	*conf = c;
	return 0;
}

int vr_slurm_check_value(const char *value, const struct vr_slurm_conf *conf, char *err,
                         size_t errlen)
{
	struct vr_limits limits;
	char why[256];

	if (!strcasecmp(value, VR_SLURM_OPTOUT)) {
		if (conf->allow_optout)
			return 0;
		vr_seterr(err, errlen,
		          "--gpu-mem=%s: this cluster does not allow jobs without a cap", value);
		return -EINVAL;
	}
	if (vr_parse_limits(value, &limits, why, sizeof(why))) {
		vr_seterr(err, errlen, "--gpu-mem=%s: %s", value, why);
		return -EINVAL;
	}
	if (strlen(value) >= VR_SLURM_TEXT_MAX) {
		vr_seterr(err, errlen, "--gpu-mem: value too long");
		return -EINVAL;
	}
	return 0;
}

int vr_slurm_spill(const char *value, const struct vr_slurm_conf *conf, uint64_t *budget, char *err,
                   size_t errlen)
{
	char why[256];

	*budget = 0;
	if (!value)
		return 0;
	if (!conf->allow_spill) {
		vr_seterr(err, errlen,
		          "--gpu-mem-spill: this cluster does not allow spilling GPU memory to the "
		          "host");
		return -EPERM;
	}
	if (vr_parse_spill(value[0] ? value : "auto", budget, why, sizeof(why))) {
		vr_seterr(err, errlen, "--gpu-mem-spill=%s: %s", value, why);
		return -EINVAL;
	}
	return 0;
}

int vr_slurm_guarantee(const char *value, const struct vr_slurm_conf *conf,
                       const struct vr_slurm_decision *d, char *out, size_t outlen, char *err,
                       size_t errlen)
{
	struct vr_limits g, l;
	char why[256];

	if (outlen)
		out[0] = '\0';
	if (!value)
		return 0;
	if (!conf->allow_guarantee) {
		vr_seterr(err, errlen,
		          "--gpu-mem-guarantee: this cluster does not allow GPU memory guarantees");
		return -EPERM;
	}
	if (vr_parse_limits(value, &g, why, sizeof(why))) {
		vr_seterr(err, errlen, "--gpu-mem-guarantee=%s: %s", value, why);
		return -EINVAL;
	}
	if (d && (!d->capped || d->optout)) {
		vr_seterr(
		    err, errlen,
		    "--gpu-mem-guarantee=%s: the step has no cap (a guarantee is a share within "
		    "one: give --gpu-mem too)",
		    value);
		return -EINVAL;
	}
	if (d && (vr_parse_limits(d->spec, &l, why, sizeof(why)) ||
	          vr_launch_guarantee_check(&l, &g, NULL, -1, why, sizeof(why)))) {
		vr_seterr(err, errlen, "--gpu-mem-guarantee=%s: %s (the step's cap: %s)", value,
		          why, d->spec);
		return -EINVAL;
	}
	if (vr_text_copy(out, outlen, value)) {
		vr_seterr(err, errlen, "--gpu-mem-guarantee: value too long");
		return -EINVAL;
	}
	return 0;
}

/* The value as one plain size for every device, or 0 when it is not one. */
static int single_size(const char *value, uint64_t *bytes)
{
	struct vr_limits l;

	if (vr_parse_limits(value, &l, NULL, 0) || l.count != 1 || l.item[0].dev[0] ||
	    l.item[0].is_percent)
		return 0;
	*bytes = l.item[0].bytes;
	return 1;
}

int vr_slurm_decide(const struct vr_slurm_conf *conf, const char *user_value, int gpu_job,
                    uint64_t shards, struct vr_slurm_decision *out)
{
	struct vr_limits limits;
	uint64_t shard_cap = 0, want;
	char cap_text[32];

	memset(out, 0, sizeof(*out));
	out->source = "none";
	if (user_value && !strcasecmp(user_value, VR_SLURM_OPTOUT)) {
		if (conf->allow_optout) {
			out->optout = 1;
			return 0;
		}
		snprintf(out->note, sizeof(out->note),
		         "vramctl: --gpu-mem=none is not allowed on this cluster; the site's cap "
		         "applies");
		user_value = NULL;
	}
	if (user_value && (strlen(user_value) >= sizeof(out->spec) ||
	                   vr_parse_limits(user_value, &limits, NULL, 0))) {
		snprintf(out->note, sizeof(out->note), "vramctl: ignoring invalid --gpu-mem=%.200s",
		         user_value);
		user_value = NULL;
	}
	if (conf->bytes_per_shard && shards) {
		if (shards > UINT64_MAX / conf->bytes_per_shard)
			shard_cap = UINT64_MAX;
		else
			shard_cap = shards * conf->bytes_per_shard;
	}
	if (shard_cap) {
		if (user_value && single_size(user_value, &want) && want <= shard_cap) {
			snprintf(out->spec, sizeof(out->spec), "%s", user_value);
			out->source = "user";
		} else {
			if (user_value)
				snprintf(out->note, sizeof(out->note),
				         "vramctl: --gpu-mem=%.200s does not fit the job's %" PRIu64
				         " shard(s); the cap is theirs: %s",
				         user_value, shards,
				         vr_format_size(shard_cap, cap_text, sizeof(cap_text)));
			struct vr_limit amount = {.bytes = shard_cap};
			vr_format_amount(&amount, out->spec, sizeof(out->spec));
			out->source = "shards";
		}
		out->capped = 1;
		return 0;
	}
	if (user_value) {
		snprintf(out->spec, sizeof(out->spec), "%s", user_value);
		out->source = "user";
		out->capped = 1;
		return 0;
	}
	if (gpu_job && conf->default_spec[0]) {
		snprintf(out->spec, sizeof(out->spec), "%s", conf->default_spec);
		out->source = "default";
		out->capped = 1;
	}
	return 0;
}

int vr_slurm_group_name(uint32_t jobid, const char *host, char *buf, size_t len)
{
	char name[VR_GROUP_NAME_MAX + 1];
	int n = snprintf(name, sizeof(name), "slurm-%" PRIu32 "-", jobid);
	size_t i;

	for (i = 0; host[i] && host[i] != '.' && (size_t)n < sizeof(name) - 1; i++, n++) {
		char c = host[i];

		name[n] = vr_group_name_char((unsigned char)c) ? c : '_';
	}
	name[n] = '\0';
	/* The registry's rule, checked rather than assumed. */
	if (vr_group_name_check(name, NULL, 0) < 0)
		return -EINVAL;
	return vr_text_copy(buf, len, name);
}

int vr_slurm_step_cgroup(const char *path, uint32_t jobid, uint32_t stepid, char *out, size_t len,
                         int *made)
{
	const char *step = NULL;
	for (const char *p = strstr(path, "/step_"); p; p = strstr(p + 1, "/step_"))
		step = p;
	int n;
	*made = !step;
	if (step) {
		size_t end = strcspn(step + 1, "/") + 1 + (size_t)(step - path);
		n = snprintf(out, len, "%.*s", (int)end, path);
	} else {
		n = snprintf(out, len, "%s/vramctl_%" PRIu32 ".%" PRIu32,
		             strcmp(path, "/") ? path : "", jobid, stepid);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
