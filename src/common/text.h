/*
 * text.h - small text helpers shared by the pure parsers in src/common and
 * the Slurm plugin's policy. Pure code: no allocation, no global state.
 */
#ifndef VRAMCTL_TEXT_H
#define VRAMCTL_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/compiler.h"

/* Formats a one-line message into err; does nothing when err is NULL or
 * errlen is 0, so callers may pass an optional buffer straight through. */
void vr_seterr(char *err, size_t errlen, const char *fmt, ...) VR_PRINTF(3, 4);

/*
 * Copies text a view did not write itself (command lines, user and group
 * names, notes) into dst (len > 0, always terminated), so that printing it
 * cannot drive a terminal: control characters (C0, DEL, and C1 as UTF-8),
 * and bytes that are not valid UTF-8, become \xNN. Valid printable UTF-8
 * is kept. Returns dst.
 */
char *vr_text_escape(char *dst, size_t len, const char *src);

/* A time (seconds since the epoch) as "YYYY-MM-DD HH:MM:SS UTC", the one
 * form vramctl prints times in (a cap change in `status` and the report);
 * "?" when it cannot be. Returns buf. */
char *vr_format_utc(uint64_t when, char *buf, size_t len);

/* Copies src into dst whole: 0, or -ENAMETOOLONG (dst untouched) when it
 * needs more than len bytes with its NUL. */
int vr_text_copy(char *dst, size_t len, const char *src);

/*
 * A registry directory from a site's pattern: every "%u" replaced by uid,
 * "%%" by "%". Returns 0, -EINVAL for another '%' sequence, or -ENAMETOOLONG.
 * VR_DEFAULT_DIR_PREFIX "%u" is the library's own default for that uid.
 * (Here, not in src/launch, because the library and the registry read a
 * site's pattern too: vramctl.conf's registry_dir.)
 */
int vr_dir_pattern(const char *pattern, uid_t uid, char *buf, size_t len);

/*
 * A GPU as a process numbers it, for a message: "GPU 0", or with its UUID,
 * "GPU 0 (GPU-...)", when renumbered is set (CUDA_VISIBLE_DEVICES in the
 * process's environment: its index is not the one status and nvidia-smi
 * show). uuid may be NULL or "". Returns buf.
 */
char *vr_gpu_label(char *buf, size_t len, int index, const char *uuid, int renumbered);

/* The program's name in a command line: the first word without its
 * directory ("/usr/bin/python3 -u x.py" -> "python3"). Returns where it
 * starts and sets *len to its length (0 for an empty command). */
const char *vr_command_name(const char *cmd, size_t *len);

#endif /* VRAMCTL_TEXT_H */
