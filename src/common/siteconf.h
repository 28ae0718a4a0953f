/*
 * siteconf.h - the administrator's configuration file, /etc/vramctl/vramctl.conf
 * (vramctl.conf(5)). Read by the injected library, the CLI and the registry,
 * so it is libc-only: no allocation, bounded buffers, one read of a small file.
 *
 * Format, strictly parsed: one "key = value" per line; blank lines and lines
 * whose first non-blank character is '#' are ignored; every other line must
 * be a known key, given once, with a non-empty value. Keys:
 *
 *   default_limit   = SPEC     cap for `vramctl run` without --limit
 *   max_limit       = SPEC     the site's maximum cap per device (amounts or
 *                              GPU-UUID=amount; no device indices)
 *   allow_above_max = yes|no   may a user ask for more than max_limit (no)
 *   user_limit      = SPEC     one cap per user and device, shared by all of
 *                              that user's processes under the library (as
 *                              max_limit: amounts or GPU-UUID=amount)
 *   registry_dir    = DIR      default books directory; %u: the uid, %%: %
 *   export_listen   = ADDR:PORT  `vramctl export`'s default address
 *
 * Two files are read: the admin file (VR_SITE_CONF, root-owned, not writable
 * by group or others), then the file $VRAMCTL_CONFIG names, if any. The
 * second may set what the admin file leaves unset and may add a maximum, but
 * never loosens one: every file's enforced maximum applies, so a user who
 * points VRAMCTL_CONFIG at a file of their own can only tighten their caps.
 */
#ifndef VRAMCTL_SITECONF_H
#define VRAMCTL_SITECONF_H

#include <stddef.h>
#include <stdint.h>

#include "common/size.h"

#ifndef VR_SITE_CONF
#define VR_SITE_CONF "/etc/vramctl/vramctl.conf"
#endif
/* Names a second configuration file, read after the admin file. */
#define VR_ENV_CONFIG "VRAMCTL_CONFIG"

#define VR_SITE_TEXT 512

/* One file's settings; an empty text or -1 means "not set here". */
struct vr_siteconf {
	char default_limit[VR_SITE_TEXT];
	char max_limit[VR_SITE_TEXT];
	struct vr_limits max; /* max_limit parsed (count 0: none) */
	int allow_above_max;  /* -1 unset, 0 no, 1 yes */
	char user_limit[VR_SITE_TEXT];
	char registry_dir[VR_SITE_TEXT];
	char export_listen[VR_SITE_TEXT];
};

struct vr_site {
	int nfiles;                   /* files read (0..2) */
	struct vr_siteconf file[2];   /* [0] admin file, [1] $VRAMCTL_CONFIG */
	char path[2][VR_SITE_TEXT];   /* where each came from */
	int bad;                      /* a file could not be used: see err */
	char err[VR_SITE_TEXT + 256]; /* "PATH:LINE: why", one line */
};

/*
 * Parses one file's text (len bytes; need not end in NUL). Returns 0, or
 * -EINVAL with "LINE: why" in err. *out is filled either way (a partly read
 * file is never used: callers check the result).
 */
int vr_siteconf_parse(const char *text, size_t len, struct vr_siteconf *out, char *err,
                      size_t errlen);

/*
 * Reads both files into *site. A missing admin file is no error (a missing
 * file that VRAMCTL_CONFIG names is); a file that is not a regular file, is
 * too large, cannot be read, is malformed, or (the admin file only) is not
 * owned by root or is writable by group or others sets site->bad and
 * site->err. Returns 0, or -1 when site->bad.
 */
int vr_site_load(struct vr_site *site);
/* The same with the paths given (tests); extra may be NULL. */
int vr_site_load_from(struct vr_site *site, const char *admin, const char *extra);

/* The process-wide copy, loaded at the first call (thread-safe). */
const struct vr_site *vr_site_get(void);

/* The first file's value for a text key (default_limit, registry_dir,
 * export_listen, user_limit), or NULL when no file sets it: the admin
 * file's when it sets it (a user's own file cannot remove its user_limit). */
const char *vr_site_text(const struct vr_site *site, size_t offset);
#define VR_SITE_TEXT_OF(site, field) vr_site_text(site, offsetof(struct vr_siteconf, field))

/*
 * The enforced maximum for one device (index as the program sees it, its
 * "GPU-..." UUID, its physical size): the smallest max_limit of every file
 * that does not say allow_above_max = yes. Returns 1 and sets *max, or 0 when
 * no enforced maximum applies to the device.
 */
int vr_site_max_for(const struct vr_site *site, int index, const char *uuid,
                    uint64_t physical_total, uint64_t *max);

/* Whether some enforced maximum for the device is a share of its memory
 * (a percentage): vr_site_max_for needs its physical size then. */
int vr_site_max_is_share(const struct vr_site *site, int index, const char *uuid);

/* Whether any file sets an enforced maximum (for some device). */
int vr_site_has_max(const struct vr_site *site);

#endif /* VRAMCTL_SITECONF_H */
