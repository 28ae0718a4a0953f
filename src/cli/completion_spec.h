/*
 * completion_spec.h - what a command's --help says, read for completion
 * (completion_spec.c): its options with the kind of value each takes, its
 * subcommands and positionals.
 */
#ifndef VRAMCTL_CLI_COMPLETION_SPEC_H
#define VRAMCTL_CLI_COMPLETION_SPEC_H

#define MAX_ITEMS     64
#define SPEC_NAME_MAX 64

enum arg_kind {
	ARG_NONE,
	ARG_OTHER,
	ARG_SPEC,
	ARG_GROUP,
	ARG_DEV,
	ARG_KERNEL,
	ARG_CHOICE,
	ARG_FILE,
	ARG_DIR,
	ARG_COMMAND
};

struct opt {
	char name[SPEC_NAME_MAX];
	enum arg_kind kind;
	int optional; /* "--watch [SECONDS]" */
	char choices[128];
};

/* What one command's help says. */
struct spec {
	int nopts, ncmds, npos;
	struct opt opts[MAX_ITEMS];
	char cmds[MAX_ITEMS][SPEC_NAME_MAX];
	struct opt pos[8]; /* positionals in order (kind, choices) */
};

/* Reads the help of "vramctl PATH..." into s. 0, or -1 when there is none. */
int cli_spec_load(struct spec *s, int npath, char **path);

/* The option called name in s, or NULL. */
struct opt *cli_spec_find_opt(struct spec *s, const char *name);

#endif /* VRAMCTL_CLI_COMPLETION_SPEC_H */
