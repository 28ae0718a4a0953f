/*
 * text.c - small text helpers (see text.h).
 */
#include "common/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void vr_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The length of the valid UTF-8 sequence at p (2 to 4), or 0. */
static int utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	int n = c >= 0xc2 && c <= 0xdf   ? 2
	        : c >= 0xe0 && c <= 0xef ? 3
	        : c >= 0xf0 && c <= 0xf4 ? 4
	                                 : 0;
	unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f; /* no surrogates */
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n == 0 || p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	if (c == 0xc2 && p[1] <= 0x9f) /* U+0080..U+009F: C1 controls (0x9b is CSI) */
		return 0;
	return n;
}

char *vr_text_escape(char *dst, size_t len, const char *src)
{
	static const char hx[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(src ? src : "");
	size_t o = 0;
	while (*p) {
		int n = *p >= 0x20 && *p < 0x7f ? 1 : *p >= 0x80 ? utf8_len(p) : 0;
		if (n > 0) {
			if (o + (size_t)n >= len)
				break;
			for (int i = 0; i < n; i++)
				dst[o++] = (char)*p++;
			continue;
		}
		if (o + 4 >= len)
			break;
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hx[*p >> 4];
		dst[o++] = hx[*p & 15];
		p++;
	}
	dst[o] = '\0';
	return dst;
}

int vr_text_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

int vr_dir_pattern(const char *pattern, uid_t uid, char *buf, size_t len)
{
	size_t o = 0;
	const char *p;

	for (p = pattern; *p; p++) {
		char piece[24];
		size_t n;

		if (*p == '%' && p[1] == 'u') {
			snprintf(piece, sizeof(piece), "%lu", (unsigned long)uid);
			p++;
		} else if (*p == '%' && p[1] == '%') {
			strcpy(piece, "%");
			p++;
		} else if (*p == '%') {
			return -EINVAL;
		} else {
			piece[0] = *p;
			piece[1] = '\0';
		}
		n = strlen(piece);
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(buf + o, piece, n);
		o += n;
	}
	if (o >= len)
		return -ENAMETOOLONG;
	buf[o] = '\0';
	return 0;
}

const char *vr_command_name(const char *cmd, size_t *len)
{
	size_t wl = strcspn(cmd, " ");
	const char *w = cmd;
	for (size_t j = 0; j < wl; j++)
		if (cmd[j] == '/')
			w = cmd + j + 1;
	*len = wl - (size_t)(w - cmd);
	return w;
}

char *vr_format_utc(uint64_t when, char *buf, size_t len)
{
	time_t t = (time_t)when;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
	return buf;
}

char *vr_gpu_label(char *buf, size_t len, int index, const char *uuid, int renumbered)
{
	if (renumbered && uuid && uuid[0])
		snprintf(buf, len, "GPU %d (%s)", index, uuid);
	else
		snprintf(buf, len, "GPU %d", index);
	return buf;
}
