/*
 * contract.c - a launcher's request turned into the environment contract:
 * the spec normalised against the devices, LD_PRELOAD, the growth switches
 * and the registry directory (see launch.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/contract.h"
#include "common/text.h"
#include "launch/launch.h"

static int is_sep(char c)
{
	return c == ':' || c == ' ';
}

/* Whether lib is one of the entries of an LD_PRELOAD value. */
static int has_entry(const char *cur, const char *lib)
{
	size_t ll = strlen(lib);
	const char *p = cur;

	while (p && *p) {
		size_t n = 0;

		while (is_sep(*p))
			p++;
		while (p[n] && !is_sep(p[n]))
			n++;
		if (n == ll && n && !strncmp(p, lib, n))
			return 1;
		p += n;
	}
	return 0;
}

int vr_preload_add(const char *cur, const char *lib, char *buf, size_t len)
{
	int n;

	if (!lib[0] || strpbrk(lib, ": "))
		return -EINVAL;
	if (!cur || !cur[0])
		return vr_text_copy(buf, len, lib);
	if (has_entry(cur, lib))
		return vr_text_copy(buf, len, cur);
	n = snprintf(buf, len, "%s:%s", cur, lib);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int vr_preload_remove(const char *cur, const char *lib, char *buf, size_t len)
{
	size_t ll = strlen(lib), o = 0;
	const char *p = cur ? cur : "";

	if (len == 0)
		return -ENAMETOOLONG;
	while (*p) {
		size_t n = 0;

		while (is_sep(*p))
			p++;
		while (p[n] && !is_sep(p[n]))
			n++;
		if (n && !(n == ll && !strncmp(p, lib, n))) {
			if (o + n + (o ? 1 : 0) >= len)
				return -ENAMETOOLONG;
			if (o)
				buf[o++] = ':';
			memcpy(buf + o, p, n);
			o += n;
		}
		p += n;
	}
	buf[o] = '\0';
	return 0;
}

int vr_launch_registry_env(char *err, size_t errlen)
{
	const char *d = getenv(VR_ENV_REGISTRY_DIR);

	if (!d || !*d || d[0] == '/')
		return 0;
	vr_seterr(err, errlen,
	          "%s=%s is not an absolute path: processes started from other directories "
	          "would keep other books (one --group, several caps); give an absolute path",
	          VR_ENV_REGISTRY_DIR, d);
	return -1;
}

int vr_contract_apply(const struct vr_contract *c, vr_setenv_fn set, void *ctx, char *err,
                      size_t errlen)
{
	size_t len = (c->cur_preload ? strlen(c->cur_preload) : 0) + strlen(c->lib) + 2;
	char *preload = malloc(len);
	int rc;

	if (!preload) {
		vr_seterr(err, errlen, "out of memory");
		return -1;
	}
	rc = vr_preload_add(c->cur_preload, c->lib, preload, len);
	if (rc == -EINVAL) {
		vr_seterr(err, errlen,
		          "the library path '%s' cannot go in LD_PRELOAD (it holds a space or ':')",
		          c->lib);
		free(preload);
		return -1;
	}
	char spill[32], park[32];
	snprintf(spill, sizeof(spill), "%llu", (unsigned long long)c->spill);
	snprintf(park, sizeof(park), "%llu", (unsigned long long)c->park_budget);
	rc = rc < 0 || (c->limit && set(ctx, VR_ENV_LIMIT, c->limit, 1)) ||
	     (c->limit && set(ctx, VR_ENV_SPILL, c->spill ? spill : NULL, 1)) ||
	     (c->limit && set(ctx, VR_ENV_GUARANTEE, c->guarantee, 1)) ||
	     (c->limit && set(ctx, VR_ENV_GUARANTEE_TOKEN, c->token, 1)) ||
	     (c->limit && set(ctx, VR_ENV_WAIT, c->wait, 1)) ||
	     (c->limit && set(ctx, VR_ENV_PARK_IDLE, c->park_idle, 1)) ||
	     (c->limit && set(ctx, VR_ENV_PARK_BUDGET, c->park_idle ? park : NULL, 1)) ||
	     (c->group && set(ctx, VR_ENV_GROUP, c->group, 1)) ||
	     (c->count && set(ctx, VR_ENV_COUNT, c->count, 1)) ||
	     (c->registry_dir && set(ctx, VR_ENV_REGISTRY_DIR, c->registry_dir, 1)) ||
	     (c->growth && (set(ctx, VR_ENV_GROWTH, "1", 1) ||
	                    set(ctx, "TF_FORCE_GPU_ALLOW_GROWTH", "true", 0) ||
	                    set(ctx, "XLA_PYTHON_CLIENT_PREALLOCATE", "false", 0))) ||
	     set(ctx, "LD_PRELOAD", preload, 1);
	free(preload);
	if (rc) {
		vr_seterr(err, errlen, "cannot set the environment for the program");
		return -1;
	}
	return 0;
}

int vr_contract_undo(const char *lib, const char *cur_preload, vr_setenv_fn set, void *ctx)
{
	size_t len = cur_preload ? strlen(cur_preload) + 1 : 1;
	char *rest = malloc(len);
	int rc = set(ctx, VR_ENV_LIMIT, NULL, 1) | set(ctx, VR_ENV_GROUP, NULL, 1) |
	         set(ctx, VR_ENV_GROWTH, NULL, 1) | set(ctx, VR_ENV_SPILL, NULL, 1) |
	         set(ctx, VR_ENV_GUARANTEE, NULL, 1) | set(ctx, VR_ENV_GUARANTEE_TOKEN, NULL, 1) |
	         set(ctx, VR_ENV_WAIT, NULL, 1) | set(ctx, VR_ENV_PARK_IDLE, NULL, 1) |
	         set(ctx, VR_ENV_PARK_BUDGET, NULL, 1);

	if (!rest)
		return -1;
	if (cur_preload && vr_preload_remove(cur_preload, lib, rest, len) == 0)
		rc |= set(ctx, "LD_PRELOAD", rest[0] ? rest : NULL, 1);
	free(rest);
	return rc ? -1 : 0;
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
static int find_device(const char *dev, const struct vr_launch_dev *devs, int ndev)
{
	unsigned char raw[VR_UUID_LEN];
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

int vr_launch_normalise(const struct vr_limits *l, const struct vr_launch_dev *devs, int ndev,
                        const char *why_no_driver, char *out, size_t outlen, char *err,
                        size_t errlen)
{
	int owner[VR_MAX_DEVICES];
	size_t used = 0;

	for (int i = 0; i < VR_MAX_DEVICES; i++)
		owner[i] = -1;
	if (ndev > VR_MAX_DEVICES)
		ndev = VR_MAX_DEVICES;
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
				vr_seterr(
				    err, errlen,
				    "cannot check device '%s': %s\n"
				    "vramctl: give a cap for every device (e.g. --limit 4G), or "
				    "make the driver loadable (LD_LIBRARY_PATH, VRAMCTL_DRIVER)",
				    it->dev, why_no_driver);
				return -1;
			}
			d = find_device(it->dev, devs, ndev);
			if (d < 0) {
				if (ndev == 0)
					vr_seterr(
					    err, errlen,
					    "unknown device '%s' (the driver reports no device)",
					    it->dev);
				else
					vr_seterr(err, errlen,
					          "unknown device '%s' (devices: 0..%d; 'vramctl "
					          "status' lists their UUIDs)",
					          it->dev, ndev - 1);
				return -1;
			}
			if (owner[d] >= 0) {
				vr_seterr(err, errlen, "device %d named twice ('%s' and '%s')", d,
				          l->item[owner[d]].dev, it->dev);
				return -1;
			}
			owner[d] = i;
			n = snprintf(out + used, outlen - used, "%s%s=%s", used ? "," : "",
			             devs[d].uuid, amount);
		}
		if (n < 0 || (size_t)n >= outlen - used) {
			vr_seterr(err, errlen, "the spec is too long");
			return -1;
		}
		used += (size_t)n;
	}
	return 0;
}

/* The cap's item that applies where guarantee item it does, seen without
 * devices: the one for the same DEV, else the one for every device. */
static const struct vr_limit *cap_item(const struct vr_limits *l, const struct vr_limit *it)
{
	const struct vr_limit *all = NULL;

	for (int i = 0; i < l->count; i++) {
		if (!strcasecmp(l->item[i].dev, it->dev))
			return &l->item[i];
		if (!l->item[i].dev[0])
			all = &l->item[i];
	}
	return all;
}

/* Item by item, no device seen (vr_launch_guarantee_check). */
static int check_items(const struct vr_limits *l, const struct vr_limits *g, char *err,
                       size_t errlen)
{
	for (int i = 0; i < g->count; i++) {
		const struct vr_limit *it = &g->item[i], *cap = cap_item(l, it);
		char a[64], b[64];

		vr_format_amount(it, a, sizeof a);
		if (!cap) {
			vr_seterr(err, errlen,
			          "the guarantee %s%s%s has no cap on %s%s: give it a cap too",
			          it->dev, it->dev[0] ? "=" : "", a, it->dev[0] ? "device " : "",
			          it->dev[0] ? it->dev : "every device");
			return -1;
		}
		if (cap->is_percent != it->is_percent ||
		    (it->is_percent ? it->percent_e9 <= cap->percent_e9 : it->bytes <= cap->bytes))
			continue;
		vr_format_amount(cap, b, sizeof b);
		vr_seterr(err, errlen, "the guarantee %s%s%s is above the cap there (%s)", it->dev,
		          it->dev[0] ? "=" : "", a, b);
		return -1;
	}
	return 0;
}

int vr_launch_small_cap(const struct vr_limits *l, const char *count, char *note, size_t len)
{
	char a[32], b[32];
	if (count && !strcmp(count, "allocations"))
		return 0;
	for (int k = 0; k < l->count; k++) {
		const struct vr_limit *it = &l->item[k];
		if (it->is_percent || it->bytes >= VR_CONTEXT_SMALL)
			continue;
		snprintf(note, len,
		         "a cap of %s is less than a CUDA context takes on the card (%s and more; "
		         "hundreds of MiB on most GPUs), and the cap counts the card: every "
		         "program's CUDA start-up will be refused (--count allocations caps only "
		         "what it allocates)",
		         vr_format_size_digits(it->bytes, VR_SIZE_DIGITS_MAX + 1, a, sizeof a),
		         vr_format_size(VR_CONTEXT_SMALL, b, sizeof b));
		return 1;
	}
	return 0;
}

int vr_launch_guarantee_check(const struct vr_limits *l, const struct vr_limits *g,
                              const struct vr_launch_dev *devs, int ndev, char *err, size_t errlen)
{
	if (ndev <= 0)
		return check_items(l, g, err, errlen);
	for (int i = 0; i < ndev && i < VR_MAX_DEVICES; i++) {
		const struct vr_launch_dev *d = &devs[i];
		uint64_t want, cap;
		char a[32], b[32];

		if (!vr_limits_cap_for(g, d->index, d->uuid, d->total, &want))
			continue;
		if (!vr_limits_cap_for(l, d->index, d->uuid, d->total, &cap)) {
			vr_seterr(err, errlen,
			          "GPU %d has a guarantee (%s) and no cap: give it a cap too",
			          d->index, vr_format_size(want, a, sizeof a));
			return -1;
		}
		if (want > cap) {
			int dg = vr_size_digits((uint64_t[]){want, cap}, 2, 0);
			vr_seterr(err, errlen, "the guarantee on GPU %d (%s) is above its cap (%s)",
			          d->index, vr_format_size_digits(want, dg, a, sizeof a),
			          vr_format_size_digits(cap, dg, b, sizeof b));
			return -1;
		}
	}
	return 0;
}
