/*
 * util.h - small libc-only helpers shared by the registry's writer and
 * reader. Internal: hidden, prefixed vr_.
 */
#ifndef VRAMCTL_REGISTRY_UTIL_H
#define VRAMCTL_REGISTRY_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "common/text.h" /* vr_seterr, for one-line error messages */

/* Reads up to len-1 bytes of a (small, /proc) file and terminates them.
 * Returns the bytes read or a negative errno. */
ssize_t vr_read_file(const char *path, char *buf, size_t len);

/* CLOCK_MONOTONIC in ns. */
uint64_t vr_now_ns(void);

#endif /* VRAMCTL_REGISTRY_UTIL_H */
