/*
 * siteconf.c - the administrator's configuration file (see siteconf.h).
 *
 * Kept small and safe because every process under the injected library
 * reads it: one open, one fstat, one bounded read into a stack buffer, a
 * line parser without allocation. A file that cannot be trusted or read is
 * reported, never half-used.
 */
#include "common/siteconf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/text.h"

#define SITE_FILE_MAX 16384 /* bytes; a real file is a few hundred */

enum key_kind { KEY_SPEC, KEY_MAX, KEY_USER, KEY_BOOL, KEY_DIR, KEY_ADDR };

static const struct site_key {
	const char *name;
	enum key_kind kind;
	size_t offset; /* of the text field, or of allow_above_max */
} keys[] = {
    {"default_limit", KEY_SPEC, offsetof(struct vr_siteconf, default_limit)},
    {"max_limit", KEY_MAX, offsetof(struct vr_siteconf, max_limit)},
    {"allow_above_max", KEY_BOOL, offsetof(struct vr_siteconf, allow_above_max)},
    {"registry_dir", KEY_DIR, offsetof(struct vr_siteconf, registry_dir)},
    {"export_listen", KEY_ADDR, offsetof(struct vr_siteconf, export_listen)},
    {"user_limit", KEY_USER, offsetof(struct vr_siteconf, user_limit)},
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Checks a value for its key and stores it; 0 or -1 with a message. */
static int set_value(const struct site_key *k, const char *v, struct vr_siteconf *out, char *err,
                     size_t errlen)
{
	char *field = (char *)out + k->offset;
	char why[256], probe[VR_SITE_TEXT];

	if (k->kind == KEY_BOOL) {
		int *flag = (int *)(void *)field;

		if (*flag >= 0)
			goto twice;
		if (!strcmp(v, "yes"))
			*flag = 1;
		else if (!strcmp(v, "no"))
			*flag = 0;
		else {
			vr_seterr(err, errlen, "%s = '%s': expected yes or no", k->name, v);
			return -1;
		}
		return 0;
	}
	if (field[0])
		goto twice;
	if (strlen(v) >= VR_SITE_TEXT) {
		vr_seterr(err, errlen, "%s: the value is too long (at most %d characters)", k->name,
		          VR_SITE_TEXT - 1);
		return -1;
	}
	switch (k->kind) {
	case KEY_SPEC:
	case KEY_MAX:
	case KEY_USER: {
		struct vr_limits l;

		if (vr_parse_limits(v, &l, why, sizeof why) < 0) {
			vr_seterr(err, errlen, "%s: %s", k->name, why);
			return -1;
		}
		if (k->kind == KEY_MAX || k->kind == KEY_USER) {
			for (int i = 0; i < l.count; i++) {
				if (l.item[i].dev[0] && strncasecmp(l.item[i].dev, "GPU-", 4) &&
				    strncasecmp(l.item[i].dev, "MIG-", 4)) {
					vr_seterr(
					    err, errlen,
					    "%s: '%s': name devices by UUID (GPU-...), "
					    "not by index: an index depends on each program's "
					    "CUDA_VISIBLE_DEVICES",
					    k->name, l.item[i].dev);
					return -1;
				}
			}
			if (k->kind == KEY_MAX)
				out->max = l;
		}
		break;
	}
	case KEY_DIR:
		if (v[0] != '/' || vr_dir_pattern(v, 0, probe, sizeof probe) < 0) {
			vr_seterr(
			    err, errlen,
			    "registry_dir = '%s': need an absolute path (%%u: the user's uid, "
			    "%%%%: a %%)",
			    v);
			return -1;
		}
		break;
	case KEY_ADDR:
		if (!strchr(v, ':') || strpbrk(v, " \t")) {
			vr_seterr(err, errlen, "export_listen = '%s': expected ADDR:PORT", v);
			return -1;
		}
		break;
	case KEY_BOOL:
		break;
	}
	memcpy(field, v, strlen(v) + 1);
	return 0;
twice:
	vr_seterr(err, errlen, "%s is given twice", k->name);
	return -1;
}

int vr_siteconf_parse(const char *text, size_t len, struct vr_siteconf *out, char *err,
                      size_t errlen)
{
	char line[VR_SITE_TEXT + 64], lerr[VR_SITE_TEXT + 128];
	size_t pos = 0;
	int lineno = 0;

	memset(out, 0, sizeof *out);
	out->allow_above_max = -1;
	while (pos < len) {
		size_t end = pos, n;
		char *p, *eq, *kend, *v, *vend;
		const struct site_key *k = NULL;

		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		lineno++;
		if (n >= sizeof line) {
			vr_seterr(err, errlen, "%d: the line is too long", lineno);
			return -EINVAL;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		if (strlen(line) != n) {
			vr_seterr(err, errlen, "%d: a NUL byte in the line", lineno);
			return -EINVAL;
		}
		for (p = line; is_blank(*p); p++)
			;
		if (!*p || *p == '#')
			continue;
		eq = strchr(p, '=');
		if (!eq) {
			vr_seterr(err, errlen, "%d: expected 'key = value'", lineno);
			return -EINVAL;
		}
		for (kend = eq; kend > p && is_blank(kend[-1]); kend--)
			;
		*kend = '\0';
		for (v = eq + 1; is_blank(*v); v++)
			;
		for (vend = v + strlen(v); vend > v && is_blank(vend[-1]); vend--)
			;
		*vend = '\0';
		for (size_t i = 0; i < VR_ARRAY_LEN(keys); i++)
			if (!strcmp(p, keys[i].name))
				k = &keys[i];
		if (!k) {
			vr_seterr(err, errlen,
			          "%d: unknown key '%s' (known: default_limit, max_limit, "
			          "allow_above_max, user_limit, registry_dir, export_listen)",
			          lineno, p);
			return -EINVAL;
		}
		if (!*v) {
			vr_seterr(err, errlen, "%d: %s has no value", lineno, p);
			return -EINVAL;
		}
		if (set_value(k, v, out, lerr, sizeof lerr) < 0) {
			vr_seterr(err, errlen, "%d: %s", lineno, lerr);
			return -EINVAL;
		}
	}
	return 0;
}

/* One file into site->file[site->nfiles]; admin: the ownership rules apply. */
static int load_file(struct vr_site *site, const char *path, int admin)
{
	char buf[SITE_FILE_MAX], why[VR_SITE_TEXT + 128];
	struct stat st;
	ssize_t n;
	size_t got = 0;
	/* O_NONBLOCK: a FIFO named here must not hang the program in open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		/* The admin file is optional; a file named in VRAMCTL_CONFIG was
		 * asked for, and may have held a maximum: missing, it is an
		 * error like any other (fail closed). */
		if (errno == ENOENT && admin)
			return 0;
		vr_seterr(site->err, sizeof site->err, "%s: cannot open: %s%s", path,
		          strerror(errno), admin ? "" : " (named in " VR_ENV_CONFIG ")");
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		vr_seterr(site->err, sizeof site->err, "%s: not a regular file", path);
		goto bad;
	}
	if (admin && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		vr_seterr(site->err, sizeof site->err,
		          "%s: must be owned by root and not writable by group or others "
		          "(chown root:root, chmod 644)",
		          path);
		goto bad;
	}
	while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			vr_seterr(site->err, sizeof site->err, "%s: cannot read: %s", path,
			          strerror(errno));
			goto bad;
		}
		got += (size_t)n;
	}
	if (got == sizeof buf) {
		vr_seterr(site->err, sizeof site->err, "%s: too large (at most %d bytes)", path,
		          SITE_FILE_MAX - 1);
		goto bad;
	}
	close(fd);
	if (vr_siteconf_parse(buf, got, &site->file[site->nfiles], why, sizeof why) < 0) {
		vr_seterr(site->err, sizeof site->err, "%s:%s", path, why);
		return -1;
	}
	snprintf(site->path[site->nfiles], sizeof site->path[0], "%s", path);
	site->nfiles++;
	return 0;
bad:
	close(fd);
	return -1;
}

int vr_site_load(struct vr_site *site)
{
	return vr_site_load_from(site, VR_SITE_CONF, secure_getenv(VR_ENV_CONFIG));
}

/* Loads into a zeroed *site. */
static int load_files(struct vr_site *site, const char *admin, const char *extra)
{
	if (load_file(site, admin, 1) < 0 || (extra && *extra && load_file(site, extra, 0) < 0)) {
		site->bad = 1;
		return -1;
	}
	return 0;
}

int vr_site_load_from(struct vr_site *site, const char *admin, const char *extra)
{
	memset(site, 0, sizeof *site);
	return load_files(site, admin, extra);
}

static struct vr_site site_once;
static pthread_once_t site_once_ctl = PTHREAD_ONCE_INIT;

/* site_once is static, so zero already: clearing it again would write, and
 * so fault in, its four pages in every process that loads the library,
 * most of which have no file to read. */
static void site_load_once(void)
{
	load_files(&site_once, VR_SITE_CONF, secure_getenv(VR_ENV_CONFIG));
}

const struct vr_site *vr_site_get(void)
{
	pthread_once(&site_once_ctl, site_load_once);
	return &site_once;
}

const char *vr_site_text(const struct vr_site *site, size_t offset)
{
	for (int i = 0; i < site->nfiles; i++) {
		const char *v = (const char *)&site->file[i] + offset;

		if (v[0])
			return v;
	}
	return NULL;
}

static int enforced(const struct vr_siteconf *f)
{
	return f->max.count > 0 && f->allow_above_max != 1;
}

int vr_site_max_for(const struct vr_site *site, int index, const char *uuid,
                    uint64_t physical_total, uint64_t *max)
{
	int found = 0;

	for (int i = 0; i < site->nfiles; i++) {
		uint64_t m;

		if (!enforced(&site->file[i]) ||
		    !vr_limits_cap_for(&site->file[i].max, index, uuid, physical_total, &m))
			continue;
		if (!found || m < *max)
			*max = m;
		found = 1;
	}
	return found;
}

int vr_site_max_is_share(const struct vr_site *site, int index, const char *uuid)
{
	for (int i = 0; i < site->nfiles; i++) {
		const struct vr_limit *it;

		if (enforced(&site->file[i]) &&
		    (it = vr_limits_item_for(&site->file[i].max, index, uuid)) && it->is_percent)
			return 1;
	}
	return 0;
}

int vr_site_has_max(const struct vr_site *site)
{
	for (int i = 0; i < site->nfiles; i++)
		if (enforced(&site->file[i]))
			return 1;
	return 0;
}
