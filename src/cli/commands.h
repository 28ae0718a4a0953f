/*
 * commands.h - the vramctl subcommands. Each lives in its own file and takes
 * the arguments after its name (argv[0] is the subcommand). Each returns the
 * process exit status (common/exit.h): 0, or VR_EXIT_ERROR (125) for
 * vramctl's own errors, unless its man page says otherwise.
 */
#ifndef VRAMCTL_CLI_COMMANDS_H
#define VRAMCTL_CLI_COMMANDS_H

int cmd_run(int argc, char **argv);        /* run.c */
int cmd_demo(int argc, char **argv);       /* demo.c */
int cmd_status(int argc, char **argv);     /* status.c */
int cmd_top(int argc, char **argv);        /* top.c */
int cmd_export(int argc, char **argv);     /* export.c */
int cmd_doctor(int argc, char **argv);     /* doctor.c */
int cmd_cdi(int argc, char **argv);        /* cdi.c */
int cmd_kernel(int argc, char **argv);     /* kernel.c */
int cmd_completion(int argc, char **argv); /* completion.c */
int cmd_plot(int argc, char **argv);       /* plot.c */
int cmd_limit(int argc, char **argv);      /* limit.c */
int cmd_guard(int argc, char **argv);      /* guard.c */
int cmd_preload(int argc, char **argv);    /* preload.c */
int cmd_watch(int argc, char **argv);      /* watch.c */
int cmd_park(int argc, char **argv);       /* park.c */
int cmd_unpark(int argc, char **argv);     /* park.c */

#endif /* VRAMCTL_CLI_COMMANDS_H */
