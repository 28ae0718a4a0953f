/*
 * run.h - pieces of `vramctl run` that `vramctl demo` and `doctor` reuse: the devices as
 * the driver reports them, and launching a command as a child that vramctl
 * waits for, with exit statuses as env(1) and timeout(1) report them.
 */
#ifndef VRAMCTL_CLI_RUN_H
#define VRAMCTL_CLI_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "launch/launch.h"

/* vramctl's own exit statuses (as env(1), timeout(1)). */
#define VR_EXIT_ERROR    125
#define VR_EXIT_NOEXEC   126
#define VR_EXIT_NOTFOUND 127

/*
 * Loads the driver ($VRAMCTL_DRIVER, else "libcuda.so.1" as the loader finds
 * it) and lists the visible devices. Returns the device count (>= 0), or -1
 * with a one-line reason in err when no driver can be loaded or initialised.
 * The driver stays loaded (vramctl only execs children afterwards).
 */
int cli_devices(struct vr_launch_dev *devs, int max, char *err, size_t errlen);

/*
 * Runs argv[0] (searched in PATH) as a child and waits for it, forwarding
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to vramctl.
 * Returns the child's exit status, 128+N if it died of signal N, 126 if it
 * could not be executed, 127 if it was not found (with a message on stderr),
 * or 125 if vramctl could not start it at all.
 */
int cli_spawn(const char *const argv[]);
/* The same, also giving the child's pid and its raw wait status (0 when it
 * could not be waited for; 126/127 cases: the child's _exit status). */
int cli_spawn_wait(const char *const argv[], pid_t *child, int *wstatus);

/*
 * The injected library's path (see run.c): 0, or -1 with the reason in err.
 */
int cli_find_library(char *out, size_t len, char *err, size_t errlen);

/* A vr_setenv_fn writing this process's own environment (which a child
 * then inherits): the CLI's way of writing the contract (run.c). */
int cli_set_own_env(void *ctx, const char *name, const char *value, int overwrite);

/*
 * A helper program installed beside the CLI (demo.c): libexec/NAME in a
 * build tree, ../libexec/vramctl/NAME from an installed bin/. 0, or -1 when
 * it is not there.
 */
int cli_find_helper(const char *name, char *out, size_t len);

/* Removes a directory and everything under it (no links followed). 0 or -1. */
int cli_remove_tree(const char *dir);

#endif /* VRAMCTL_CLI_RUN_H */
