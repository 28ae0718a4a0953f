/*
 * options.h - the option rules `vramctl run` and `vramctl cdi` share
 * (options.c). Each prints its own one-line message on error.
 */
#ifndef VRAMCTL_CLI_OPTIONS_H
#define VRAMCTL_CLI_OPTIONS_H

struct vr_limits;

/*
 * "--opt VALUE" or "--opt=VALUE" at argv[*i]: 1 matched (*i advanced past
 * the value), 0 not this option, -1 value missing.
 */
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Adds one --limit's items to *all: 0, or -1. */
int cli_add_limit(struct vr_limits *all, const char *arg);

#endif /* VRAMCTL_CLI_OPTIONS_H */
