/* Placeholder until the demo command lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_demo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vramctl: 'demo' is not built yet\n");
	return 125;
}
