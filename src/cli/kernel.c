#include "cli/commands.h"
int cmd_kernel(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 125;
}
void cli_kernel_names(void (*emit)(const char *name))
{
	(void)emit;
}
