/* Placeholder until the status command lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_status(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vramctl: 'status' is not built yet\n");
	return 125;
}
