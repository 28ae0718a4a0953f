/*
 * dir.h - the registry directory (dir.c; the rest of its API is in
 * registry.h).
 */
#ifndef VRAMCTL_REGISTRY_DIR_H
#define VRAMCTL_REGISTRY_DIR_H

#include <stddef.h>

/* Opens (creating if asked) the registry directory and checks that it is
 * ours and private. Returns a directory fd or a negative errno. */
int vr_open_registry_dir(const char *dir, int create, char *err, size_t errlen);

#endif /* VRAMCTL_REGISTRY_DIR_H */
