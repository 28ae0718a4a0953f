/*
 * text.h - small text helpers shared by the pure parsers in src/common and
 * the Slurm plugin's policy. Pure code: no allocation, no global state.
 */
#ifndef VRAMCTL_TEXT_H
#define VRAMCTL_TEXT_H

#include <stddef.h>

#include "common/compiler.h"

/* Formats a one-line message into err; does nothing when err is NULL or
 * errlen is 0, so callers may pass an optional buffer straight through. */
void vr_seterr(char *err, size_t errlen, const char *fmt, ...) VR_PRINTF(3, 4);

#endif /* VRAMCTL_TEXT_H */
