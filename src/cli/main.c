/*
 * main.c - the vramctl command: dispatches to one subcommand. Commands
 * with no function here live in their own program, libexec/vramctl-NAME
 * (cli/libexec.h), which is exec'd.
 */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/libexec.h"
#include "common/compiler.h"
#include "common/exit.h"
#include "common/version.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"run", cmd_run, "run a command under a GPU memory cap"},
    {"demo", cmd_demo, "show what a cap does, on the simulated GPU"},
    {"limit", cmd_limit, "change the cap of a running group or process"},
    {"park", cmd_park, "move a process's GPU memory to host memory now (--park-idle)"},
    {"unpark", cmd_unpark, "bring parked processes back on the GPU now"},
    {"preload", cmd_preload, "the machine's /etc/ld.so.preload entry for the library (root)"},
    {"watch", cmd_watch, "count a job's processes outside its cap against it (launchers)"},
    {"status", cmd_status, "show every GPU and process against its cap"},
    {"top", NULL, "live terminal view of GPU memory and caps"},
    {"export", NULL, "serve Prometheus metrics over HTTP"},
    {"doctor", cmd_doctor, "check that this machine is set up for caps, and what to fix"},
    {"cdi", cmd_cdi, "write a CDI spec that caps containers (podman, Kubernetes)"},
    {"kernel", cmd_kernel, "Jupyter kernels that run under a cap"},
    {"completion", cmd_completion, "print the bash or zsh completion script"},
    {"plot", NULL, "draw a trace of 'vramctl run --trace' (SVG or PNG)"},
    {"guard", cmd_guard, "root's service that gives users' guarantees (systemd starts it)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: vramctl COMMAND [ARG...]\n\ncommands:\n");
	for (size_t i = 0; i < VR_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'vramctl COMMAND --help' for a command's options; man vramctl for more.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return VR_EXIT_ERROR;
	}
	/* "vramctl help COMMAND" is "vramctl COMMAND --help". */
	if (!strcmp(argv[1], "help") && argc > 2) {
		if (argc > 3) {
			fprintf(stderr,
			        "vramctl: help: one command at a time: '%s' "
			        "('vramctl --help')\n",
			        argv[3]);
			return VR_EXIT_ERROR;
		}
		for (size_t i = 0; i < VR_ARRAY_LEN(commands); i++) {
			char help[] = "--help";
			char *args[] = {argv[2], help, NULL};

			if (strcmp(argv[2], commands[i].name) != 0)
				continue;
			return commands[i].fn ? commands[i].fn(2, args)
			                      : vr_exec_helper(commands[i].name, args);
		}
		fprintf(stderr, "vramctl: help: unknown command '%s' ('vramctl --help')\n",
		        argv[2]);
		return VR_EXIT_ERROR;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("vramctl %s\n", VRAMCTL_VERSION);
		return 0;
	}
	for (size_t i = 0; i < VR_ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn ? commands[i].fn(argc - 1, argv + 1)
			                      : vr_exec_helper(commands[i].name, argv + 1);
	if (argv[1][0] == '-')
		fprintf(stderr, "vramctl: unknown option '%s' ('vramctl --help')\n", argv[1]);
	else
		fprintf(stderr, "vramctl: unknown command '%s' ('vramctl --help')\n", argv[1]);
	return VR_EXIT_ERROR;
}
