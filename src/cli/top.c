/* Placeholder until the top command lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vramctl: 'top' is not built yet\n");
	return 125;
}
