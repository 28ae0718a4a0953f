/*
 * spawn.h - starting a command as `vramctl run` does (spawn.c): as a child
 * that vramctl waits for, with exit statuses as env(1) and timeout(1)
 * report them (common/exit.h), or in vramctl's place.
 */
#ifndef VRAMCTL_CLI_SPAWN_H
#define VRAMCTL_CLI_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/*
 * Runs argv[0] (searched in PATH) as a child and waits for it, forwarding
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to vramctl.
 * Returns the child's exit status, VR_EXIT_SIGNAL+N if it died of signal N,
 * VR_EXIT_NOEXEC if it could not be executed, VR_EXIT_NOTFOUND if it was not
 * found (with a message on stderr), or VR_EXIT_ERROR if vramctl could not
 * start it at all.
 */
int cli_spawn(const char *const argv[]);
/* The same, also giving the child's pid and its raw wait status (0 when it
 * could not be waited for; VR_EXIT_NOEXEC/NOTFOUND cases: the child's _exit
 * status). */
int cli_spawn_wait(const char *const argv[], pid_t *child, int *wstatus);

/* Orphans of the command's tree (vramctl a subreaper) that cli_spawn_wait
 * reaped while it waited: their PIDs and wait statuses, for the report.
 * Returns how many (the first 4,096). */
struct cli_reaped {
	pid_t pid;
	int status;
};
int cli_spawn_reaped(const struct cli_reaped **out);

/* The disposition of SIGXFSZ the command gets (vramctl's own at its start),
 * for a vramctl that ignores SIGXFSZ while it writes a report or trace: an
 * ignored signal stays ignored across exec, which the command must not
 * inherit. */
void cli_spawn_child_xfsz(const struct sigaction *sa);

/* Replaces vramctl with argv[0] (searched in PATH). Returns only on
 * failure: VR_EXIT_NOTFOUND or VR_EXIT_NOEXEC (with a message). */
int cli_exec(const char *const argv[]);

/* A vr_setenv_fn writing this process's own environment, which a child
 * then inherits: the CLI's way of writing the contract. */
int cli_set_own_env(void *ctx, const char *name, const char *value, int overwrite);

#endif /* VRAMCTL_CLI_SPAWN_H */
