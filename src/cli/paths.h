/*
 * paths.h - vramctl's own files, found relative to the binary (paths.c).
 */
#ifndef VRAMCTL_CLI_PATHS_H
#define VRAMCTL_CLI_PATHS_H

#include <stddef.h>

/*
 * A file of vramctl's library folder (rel: "libvramctl.so", "sim/..."):
 * beside the binary, ../lib/vramctl or ../lib/<triplet>/vramctl from it.
 * Returns 0 with the path in out, or -1 with the folders looked in in out.
 */
int cli_find_libfile(const char *rel, char *out, size_t len);

/*
 * The injected library: $VRAMCTL_LIBRARY, else in vramctl's library folder
 * (cli_find_libfile). 0 with its real path in out, or -1 with the reason in
 * err.
 */
int cli_find_library(char *out, size_t len, char *err, size_t errlen);

#endif /* VRAMCTL_CLI_PATHS_H */
