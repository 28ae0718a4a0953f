/*
 * text.c - small text helpers (see text.h).
 */
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>

void vr_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
