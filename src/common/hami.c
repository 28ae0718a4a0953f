/*
 * hami.c - HAMi's container contract in vramctl's terms (see hami.h).
 */
#include "common/hami.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/compiler.h"
#include "common/text.h"

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int vr_hami_size(const char *text, uint64_t *out, char *err, size_t errlen)
{
	const char *p = text;
	uint64_t v = 0;
	int shift = 0;

	if (!is_digit((unsigned char)*p)) {
		vr_seterr(err, errlen, "'%s' is not a size (digits, then k, m or g)", text);
		return -EINVAL;
	}
	for (; is_digit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10) {
			vr_seterr(err, errlen, "'%s' is too large", text);
			return -ERANGE;
		}
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		p++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		p++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		p++;
		break;
	default:
		p = NULL;
		break;
	}
	if (!p || *p) {
		vr_seterr(err, errlen, "'%s' is not a size (digits, then k, m or g)", text);
		return -EINVAL;
	}
	if (v == 0) {
		vr_seterr(err, errlen, "'%s': a cap must be more than zero", text);
		return -EINVAL;
	}
	if (v > (UINT64_MAX >> shift)) {
		vr_seterr(err, errlen, "'%s' is too large", text);
		return -ERANGE;
	}
	*out = v << shift;
	return 0;
}

/* Go's strconv.ParseBool true values: what HAMi's plugin tests. */
static int go_true(const char *v)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	for (size_t i = 0; i < VR_ARRAY_LEN(yes); i++)
		if (!strcmp(v, yes[i]))
			return 1;
	return 0;
}

/* The value of NAME in env when entry is exactly "NAME=...", else NULL. */
static const char *value_of(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return strncmp(entry, name, n) == 0 && entry[n] == '=' ? entry + n + 1 : NULL;
}

/* Shared cache path -> group "hami-<name>" and books "<dir>/vramctl". */
static void read_cache(const char *path, struct vr_hami *out, char *warn, size_t warnlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base);
	const char *suffix = ".cache";

	if (blen > strlen(suffix) && !strcmp(base + blen - strlen(suffix), suffix))
		blen -= strlen(suffix);
	int ok = path[0] == '/' && slash && slash > path && blen > 0 &&
	         blen + sizeof "hami-" <= sizeof out->group &&
	         (size_t)(slash - path) + sizeof "/vramctl" <= sizeof out->dir;
	for (size_t i = 0; ok && i < blen; i++) {
		char c = base[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		     is_digit((unsigned char)c) || c == '.' || c == '_' || c == '-';
	}
	if (!ok) {
		vr_seterr(warn, warnlen,
		          "%s='%s' is not an absolute path to a file named [A-Za-z0-9._-]; "
		          "the default group and books directory are used",
		          VR_HAMI_SHARED_CACHE, path);
		return;
	}
	snprintf(out->group, sizeof out->group, "hami-%.*s", (int)blen, base);
	snprintf(out->dir, sizeof out->dir, "%.*s/vramctl", (int)(slash - path), path);
}

/* LIBCUDA_LOG_LEVEL (HAMi-core: 0 errors only, 2 warnings, 3 info, 4 debug). */
static void read_log(const char *v, struct vr_hami *out, char *warn, size_t warnlen)
{
	if (!is_digit((unsigned char)v[0]) || v[1]) {
		if (*v)
			vr_seterr(warn, warnlen, "%s=%s: expected 0 to 4; ignored",
			          VR_HAMI_LOG_LEVEL, v);
		return;
	}
	static const int map[] = {1, 2, 2, 3, 4};
	int n = v[0] - '0';
	out->log_level = n < (int)VR_ARRAY_LEN(map) ? map[n] : 4;
}

int vr_hami_read(const char *const *env, struct vr_hami *out, char *err, size_t errlen, char *warn,
                 size_t warnlen)
{
	static const char prefix[] = VR_HAMI_LIMIT "_";
	uint64_t all = 0, dev[VR_HAMI_MAX_DEV] = {0};
	const char *v;

	memset(out, 0, sizeof *out);
	out->log_level = -1;
	for (const char *const *e = env; e && *e; e++)
		if ((v = value_of(*e, VR_HAMI_DISABLE_CONTROL)) && go_true(v))
			out->disabled = 1;
	if (out->disabled)
		return 0;

	for (const char *const *e = env; e && *e; e++) {
		const char *s = *e;
		uint64_t *slot = NULL;
		char name[64];

		if ((v = value_of(s, VR_HAMI_SHARED_CACHE)) && *v) {
			read_cache(v, out, warn, warnlen);
			continue;
		}
		if ((v = value_of(s, VR_HAMI_LOG_LEVEL))) {
			read_log(v, out, warn, warnlen);
			continue;
		}
		if ((v = value_of(s, VR_HAMI_LIMIT))) {
			slot = &all;
			snprintf(name, sizeof name, "%s", VR_HAMI_LIMIT);
		} else if (!strncmp(s, prefix, sizeof prefix - 1)) {
			const char *p = s + sizeof prefix - 1;
			int i = 0, digits = 0;
			for (; is_digit((unsigned char)*p) && digits < 3; p++, digits++)
				i = i * 10 + (*p - '0');
			v = strchr(s, '=');
			snprintf(name, sizeof name, "%.*s", v ? (int)(v - s) : 60, s);
			if (digits == 0 || *p != '=' ||
			    (digits > 1 && s[sizeof prefix - 1] == '0') || i >= VR_HAMI_MAX_DEV) {
				vr_seterr(err, errlen, "%s: not a device index (0 to %d) after %s",
				          name, VR_HAMI_MAX_DEV - 1, prefix);
				return -EINVAL;
			}
			v = p + 1;
			slot = &dev[i];
		} else {
			continue;
		}
		if (!*v) /* set but empty: unset, as an empty VRAMCTL_LIMIT */
			continue;
		char why[160];
		uint64_t bytes;
		if (vr_hami_size(v, &bytes, why, sizeof why) != 0) {
			vr_seterr(err, errlen, "%s: %s", name, why);
			return -EINVAL;
		}
		if (*slot) {
			vr_seterr(err, errlen, "%s is set twice", name);
			return -EINVAL;
		}
		*slot = bytes;
		out->present = 1;
	}

	/* The spec, in vramctl's grammar: an item naming a device wins over the
	 * item for every device, as CUDA_DEVICE_MEMORY_LIMIT_<i> does in HAMi. */
	size_t len = 0;
	if (all)
		len += (size_t)snprintf(out->limit, sizeof out->limit, "%llu",
		                        (unsigned long long)all);
	for (int i = 0; i < VR_HAMI_MAX_DEV; i++)
		if (dev[i])
			len +=
			    (size_t)snprintf(out->limit + len, sizeof out->limit - len, "%s%d=%llu",
			                     len ? "," : "", i, (unsigned long long)dev[i]);
	return 0;
}
