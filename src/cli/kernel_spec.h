/*
 * kernel_spec.h - Jupyter's kernelspecs, as `vramctl kernel` finds and reads
 * them (kernel_spec.c).
 */
#ifndef VRAMCTL_CLI_KERNEL_SPEC_H
#define VRAMCTL_CLI_KERNEL_SPEC_H

#include <stddef.h>

#include "common/compiler.h"

/* The largest kernel.json read. */
#define KERNEL_JSON_MAX 65536

/* Where a kernelspec is installed or removed: anywhere Jupyter looks (for
 * a remove), --user, --sys-prefix, --system. */
enum where { W_ANY, W_USER, W_SYS_PREFIX, W_SYSTEM };

/* snprintf for paths: 0, or -1 when the path did not fit. */
int cli_kspec_fmt_path(char *buf, size_t len, const char *fmt, ...) VR_PRINTF(3, 4);

/* The kernels directory for an install or a remove at w: 0, or -1 (after a
 * message where it cannot be found). */
int cli_kspec_target_dir(enum where w, char *buf, size_t len);

/* Kernel names follow the group-name rule (1 to 64 of A-Z a-z 0-9 . _ -,
 * no leading '.'): safe as a directory name and as a group name. */
int cli_kspec_valid_name(const char *n);

/* The first kernelspec folder of name in Jupyter's order: 0, or -1. */
int cli_kspec_find(const char *name, char *dir, size_t len);

/* Calls fn for every kernelspec found, the first of each name only. */
void cli_kspec_each(void (*fn)(const char *name, const char *dir, void *ctx), void *ctx);

/* Calls emit with the name of every kernelspec found (completion). */
void cli_kernel_names(void (*emit)(const char *name));

/* vramctl's metadata in the kernelspec at dir, {"limit":..., "group":...,
 * "from":...}, each into a buffer of len bytes: 0, or -1 if not ours. */
int cli_kspec_meta(const char *dir, char *limit, char *group, char *from, size_t len);

/* The program a kernelspec at dir runs (its argv[0]) into prog (len
 * bytes): 0, or -1 when it has none. */
int cli_kspec_program(const char *dir, char *prog, size_t len);

/* Reads path whole into buf (len bytes, NUL-terminated), *got its length:
 * 0, or -1 when it cannot be read or does not fit. */
int cli_kspec_read_file(const char *path, char *buf, size_t len, size_t *got);

#endif /* VRAMCTL_CLI_KERNEL_SPEC_H */
