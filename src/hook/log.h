/*
 * log.h - every message the library prints (log.c): stderr only, the fixed
 * prefix "vramctl: ", the level checked before anything is formatted. The
 * bottom of the library: it depends on nothing else in it.
 */
#ifndef VRAMCTL_HOOK_LOG_H
#define VRAMCTL_HOOK_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

enum vr_log_level { VR_LOG_QUIET, VR_LOG_ERROR, VR_LOG_WARN, VR_LOG_INFO, VR_LOG_DEBUG };

/* The most verbose level printed: VRAMCTL_LOG (or HAMi's), set once by the
 * configuration (config.c); VR_LOG_WARN until then. */
extern int vr_log_verbosity;

/* Prints one line at level, unconditionally (the vr_log macro checks). */
void vr__log(int level, const char *fmt, ...) VR_PRINTF(2, 3);
/* The level is checked before anything is formatted. */
#define vr_log(level, ...)                                                                         \
	do {                                                                                       \
		if (VR_UNLIKELY((level) <= vr_log_verbosity))                                      \
			vr__log(level, __VA_ARGS__);                                               \
	} while (0)
/* The denial line when spill could not serve it either ("; spill: WHY";
 * why may be NULL), rate limited to a few a second plus a count of the
 * rest. */
void vr_log_denied_why(int ordinal, uint64_t bytes, uint64_t cap, uint64_t in_use, const char *why);
/* Rate limit of the denial line (composed by the policy): returns 1 when a
 * line may be printed now, with " (N more denials not shown)" in more when
 * some were held back; 0 when this one is held back and counted. */
int vr_log_denial_gate(char *more, size_t len);

#endif /* VRAMCTL_HOOK_LOG_H */
