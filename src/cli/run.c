/* Placeholder until the run command lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vramctl: 'run' is not built yet\n");
	return 125;
}
