/*
 * libexec.h - finding vramctl's own files beside its binary, and running
 * the commands that live in their own executables (libexec.c).
 *
 * A command that needs a heavy library (a terminal UI, an HTTP server, a
 * plotting or JSON library...) is built as its own program,
 * libexec/vramctl-NAME, and `vramctl NAME` execs it, so that the commands
 * every job starts with (`run`, `status`) load none of those libraries.
 * docs/architecture.md, "Heavy commands in libexec", says how to add one.
 */
#ifndef VRAMCTL_CLI_LIBEXEC_H
#define VRAMCTL_CLI_LIBEXEC_H

#include <stddef.h>

/* The folder of this binary (a build tree's $(O), or an installed bin/);
 * a libexec program answers for the vramctl that runs it. */
int vr_self_dir(char *buf, size_t len);
/* 1 if dir/rel exists (written into out), else 0. */
int vr_found(const char *dir, const char *rel, char *out, size_t len);
/* 1 if the helper program NAME is found in dir/libexec (a build tree) or
 * dir/../libexec/vramctl (installed); its path is written into out. */
int vr_libexec_find(const char *dir, const char *name, char *out, size_t len);
/* Replaces this process with libexec's vramctl-CMD, given argv (argv[0] is
 * the command's name, as the cmd_* functions take it). Returns only on
 * failure, with vramctl's error status after a message. */
int vr_exec_helper(const char *cmd, char **argv);

/*
 * A helper program installed beside the CLI (demo's app, doctor's probe):
 * libexec/NAME in a build tree, ../libexec/vramctl/NAME from an installed
 * bin/. 0, or -1 when it is not there.
 */
int cli_find_helper(const char *name, char *out, size_t len);

#endif /* VRAMCTL_CLI_LIBEXEC_H */
