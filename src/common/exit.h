/*
 * exit.h - vramctl's exit statuses: the one list every command and helper
 * program returns from (vramctl(1) and each command's man page, EXIT STATUS).
 * The 125-127 block follows env(1) and timeout(1), so that a wrapped
 * command's own status stays apart from vramctl's.
 */
#ifndef VRAMCTL_COMMON_EXIT_H
#define VRAMCTL_COMMON_EXIT_H

/* Success; for `vramctl run`, the command's own status is returned instead. */
#define VR_EXIT_OK 0

/* `vramctl doctor` only: a check failed (its report says which). */
#define VR_EXIT_DOCTOR_FAILED 1
/* `vramctl doctor` only: doctor itself could not run (a GPU that does not
 * exist, no memory, the report could not be written); a bad option is a
 * usage error, VR_EXIT_ERROR, as in every command. */
#define VR_EXIT_DOCTOR_ERROR 2

/*
 * vramctl's own error, always with one message on stderr: a usage error (an
 * unknown command or option, a bad value: one line naming it and the
 * command's --help, cli/options.h), a bad configuration, or a command that
 * could not be started at all.
 */
#define VR_EXIT_ERROR 125
/* The command was found but could not be executed (permissions, format). */
#define VR_EXIT_NOEXEC 126
/* The command was not found (in PATH, or at the path given). */
#define VR_EXIT_NOTFOUND 127
/* A command that died of signal N: VR_EXIT_SIGNAL + N, as the shells say. */
#define VR_EXIT_SIGNAL 128

#endif /* VRAMCTL_COMMON_EXIT_H */
