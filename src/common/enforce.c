/*
 * enforce.c - the enforcers' words (enforce.h).
 */
#include "common/enforce.h"

#include <string.h>

static const char *const names[] = {"library", "driver", "both"};

int vr_enforce_parse(const char *text, enum vr_enforce *out)
{
	for (int i = 0; i < 3; i++)
		if (text && !strcmp(text, names[i])) {
			*out = (enum vr_enforce)(i + 1);
			return 0;
		}
	return -1;
}

const char *vr_enforce_name(enum vr_enforce e)
{
	return e >= VR_ENFORCE_LIBRARY && e <= VR_ENFORCE_BOTH ? names[e - 1] : "?";
}
