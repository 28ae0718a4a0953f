/*
 * duration.c - the time grammar of --wait and --park-idle (duration.h).
 */
#include "common/duration.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/text.h"

int vr_parse_duration(const char *text, int zero_ok, uint64_t *ms, char *err, size_t errlen)
{
	const char *p = text;
	uint64_t whole = 0, frac = 0, scale = 1;
	int digits = 0, fdigits = 0;
	if (!text || !*text) {
		vr_seterr(err, errlen, "empty time (give seconds, or 30s, 2m, 1h, 250ms)");
		return -EINVAL;
	}
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (whole <= VR_DURATION_MAX_MS) /* past it: too large, whatever follows */
			whole = whole * 10 + (uint64_t)(*p - '0');
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, fdigits++) {
			if (fdigits < 3) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			} else if (*p != '0') {
				vr_seterr(err, errlen,
				          "time '%s': at most 3 digits after the point", text);
				return -EINVAL;
			}
		}
	}
	uint64_t unit;
	if (!*p || !strcasecmp(p, "s"))
		unit = 1000;
	else if (!strcasecmp(p, "ms"))
		unit = 1;
	else if (!strcasecmp(p, "m") || !strcasecmp(p, "min"))
		unit = 60000;
	else if (!strcasecmp(p, "h"))
		unit = 3600000;
	else
		unit = 0;
	if ((!digits && !fdigits) || !unit) {
		vr_seterr(err, errlen,
		          "bad time '%s' (give seconds, or a number with ms, s, m or h: 30s, 2m)",
		          text);
		return -EINVAL;
	}
	if (whole > VR_DURATION_MAX_MS) {
		vr_seterr(err, errlen, "time '%s' is more than a week", text);
		return -ERANGE;
	}
	uint64_t v = whole * unit + frac * unit / scale;
	if (v > VR_DURATION_MAX_MS) {
		vr_seterr(err, errlen, "time '%s' is more than a week", text);
		return -ERANGE;
	}
	if (v == 0 && !zero_ok) {
		vr_seterr(err, errlen, "time '%s' is zero (give more than 1 ms)", text);
		return -EINVAL;
	}
	*ms = v;
	return 0;
}

char *vr_format_duration(uint64_t ms, char *buf, size_t len)
{
	uint64_t tenths = (ms + 50) / 100;
	if (ms < 1000)
		snprintf(buf, len, "%llu ms", (unsigned long long)ms);
	else if (ms < 59950 && tenths % 10)
		snprintf(buf, len, "%llu.%llu s", (unsigned long long)(tenths / 10),
		         (unsigned long long)(tenths % 10));
	else if (ms < 59950 || ms % 60000)
		snprintf(buf, len, "%llu s", (unsigned long long)((ms + 500) / 1000));
	else if (ms < 3600000)
		snprintf(buf, len, "%llu min", (unsigned long long)(ms / 60000));
	else if (ms % 3600000)
		snprintf(buf, len, "%llu h %llu min", (unsigned long long)(ms / 3600000),
		         (unsigned long long)(ms / 60000 % 60));
	else
		snprintf(buf, len, "%llu h", (unsigned long long)(ms / 3600000));
	return buf;
}
