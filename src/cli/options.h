/*
 * options.h - how the commands read their options (options.c): one style,
 * getopt_long over a table of struct option, and the cap rules `vramctl
 * run` and `vramctl cdi` share.
 */
#ifndef VRAMCTL_CLI_OPTIONS_H
#define VRAMCTL_CLI_OPTIONS_H

#include <getopt.h>

#include "common/compiler.h"

struct vr_limits;

/*
 * getopt_long for the commands that say their own messages: getopt's are
 * off. shortopts starts with '+' (stop at the first word that is not an
 * option, or "--") or '-' (words that are not options come back in order as
 * 1, in optarg), then ':' (a missing value comes back as ':'). On ':' and
 * '?' (an unknown option, or a value given to one that takes none) *word is
 * the argument at fault, as typed. A value given as the next word may not
 * be "--" or start with "--" (a long option, most likely): that is ':' too,
 * with *word the option and argv[optind] the word not taken; such a value
 * is written --name=VALUE. A short
 * option's value may also be
 * written -X=VALUE, as the commands read it before they used getopt.
 * The caller sets optind = 1 before the first call.
 */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               const char **word);

/* Adds one --limit's items to *all: 0, or -1 after a one-line message. */
int cli_add_limit(struct vr_limits *all, const char *arg);
/* The same for any option in the cap grammar (opt: "--guarantee"), its
 * messages naming opt. */
int cli_add_spec(struct vr_limits *all, const char *opt, const char *arg);

/*
 * Usage errors, said the same way by every command: one line on stderr,
 * "vramctl: CMD: WHAT ('vramctl CMD --help')", and VR_EXIT_ERROR returned
 * (the exit status of every usage error, vramctl(1)). cmd is as typed
 * after vramctl ("doctor", "kernel install"). cli_option_error says
 * cli_getopt's ':' (a value missing) or '?' for the word at fault.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) VR_PRINTF(2, 3);
int cli_option_error(const char *cmd, int c, const char *word);

#endif /* VRAMCTL_CLI_OPTIONS_H */
