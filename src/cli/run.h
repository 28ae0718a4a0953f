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
 * Returns the child's exit status, VR_EXIT_SIGNAL+N if it died of signal N,
 * VR_EXIT_NOEXEC if it could not be executed, VR_EXIT_NOTFOUND if it was not
 * found (with a message on stderr), or VR_EXIT_ERROR if vramctl could not
 * start it at all (common/exit.h).
 */
int cli_spawn(const char *const argv[]);
/* The same, also giving the child's pid and its raw wait status (0 when it
 * could not be waited for; VR_EXIT_NOEXEC/NOTFOUND cases: the child's _exit
 * status). */
int cli_spawn_wait(const char *const argv[], pid_t *child, int *wstatus);

/* Replaces vramctl with argv[0] (searched in PATH). Returns only on
 * failure: VR_EXIT_NOTFOUND or VR_EXIT_NOEXEC (with a message). */
int cli_exec(const char *const argv[]);

/*
 * A file of vramctl's library folder (rel: "libvramctl.so", "sim/..."):
 * beside the binary, ../lib/vramctl or ../lib/<triplet>/vramctl from it.
 * Returns 0 with the path in out, or -1 with the folders looked in in out.
 */
int cli_find_libfile(const char *rel, char *out, size_t len);

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

/*
 * The option rules of `vramctl run` that `vramctl cdi` shares (run.c). Each
 * prints its own one-line message on error.
 *   cli_opt_value: "--opt VALUE" or "--opt=VALUE" at argv[*i]; 1 matched (i
 *     advanced past the value), 0 not this option, -1 value missing.
 *   cli_add_limit: adds one --limit's items to *all; 0, or -1.
 */
struct vr_limits;
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);
int cli_add_limit(struct vr_limits *all, const char *arg);

/*
 * The administrator's configuration file (site.c, vramctl.conf(5)).
 * cli_site_check: 0, or -1 after a message saying the file is unusable and
 * `what` is refused. cli_site_default_spec: the cap for a run without
 * --limit (default_limit, else max_limit), or NULL.
 * cli_site_clamp: lowers the caps in lim (and its text, spec) to the
 * site's maximum on every device (a notice for each), rewriting both as
 * per-device UUID=amount items when one was lowered. 0, or -1.
 */
int cli_site_check(const char *what);
const char *cli_site_default_spec(void);
int cli_site_clamp(struct vr_limits *lim, const struct vr_launch_dev *devs, int ndev, char *spec,
                   size_t len);

#endif /* VRAMCTL_CLI_RUN_H */
