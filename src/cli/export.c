/* Placeholder until the export command lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vramctl: 'export' is not built yet\n");
	return 125;
}
