/*
 * fsize.h - the file size limit (RLIMIT_FSIZE, `ulimit -f`) against a file
 * about to be written: writing past it raises SIGXFSZ, which kills the
 * program. Whatever vramctl writes on a program's behalf is checked first,
 * and left out with one message instead.
 */
#ifndef VRAMCTL_COMMON_FSIZE_H
#define VRAMCTL_COMMON_FSIZE_H

#include <stdint.h>

/* The limit in bytes when a file of `bytes` would pass it, else 0. */
uint64_t vr_fsize_below(uint64_t bytes);

#endif /* VRAMCTL_COMMON_FSIZE_H */
