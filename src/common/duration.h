/*
 * duration.h - the time grammar of --wait[=TIME] and --park-idle=DURATION,
 * one for `vramctl run`, the library (VRAMCTL_WAIT,
 * VRAMCTL_PARK_IDLE), the Slurm plugin, `cdi generate` and `kernel
 * install`:
 *
 *   TIME := NUMBER [UNIT]       NUMBER: digits, with at most 3 after a "."
 *   UNIT := ms | s | m | h      (default s; "min" for m too)
 *
 * "30", "30s", "2m", "1.5h", "250ms". libc only: used by the injected
 * library too.
 */
#ifndef VRAMCTL_DURATION_H
#define VRAMCTL_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* The wait a bare --wait asks for: 60 s. */
#define VR_WAIT_DEFAULT_MS 60000ull
/* The longest wait or idle time taken: a week (a larger one is a typo). */
#define VR_DURATION_MAX_MS (7ull * 24 * 3600 * 1000)

/* Parses TIME into *ms: 0, or -EINVAL / -ERANGE with one line naming the
 * text in err (*ms untouched). Zero is refused unless zero_ok. */
int vr_parse_duration(const char *text, int zero_ok, uint64_t *ms, char *err, size_t errlen);

/* ms as people write it: "250 ms", "30 s", "1.5 s", "2 min", "1 h 30 min".
 * Into buf; returns buf. */
char *vr_format_duration(uint64_t ms, char *buf, size_t len);

#endif /* VRAMCTL_DURATION_H */
