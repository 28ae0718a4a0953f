/*
 * helper_main.c - the main of a command built as its own program,
 * libexec/vramctl-NAME (src/cli/libexec.h). Compiled once per such command
 * with -DVR_HELPER_CMD=cmd_NAME. vramctl execs it with the arguments after
 * the command's name, argv[0] being the name, as cmd_NAME takes them.
 */
#include "cli/commands.h"

#ifndef VR_HELPER_CMD
#error "VR_HELPER_CMD must name the command's function"
#endif

int main(int argc, char **argv)
{
	return VR_HELPER_CMD(argc, argv);
}
