/*
 * fs.h - file-system helpers of the commands that make a temporary tree
 * (demo, doctor's self-test).
 */
#ifndef VRAMCTL_CLI_FS_H
#define VRAMCTL_CLI_FS_H

/* Removes a directory and everything under it (no links followed). 0 or -1. */
int cli_remove_tree(const char *dir);

#endif /* VRAMCTL_CLI_FS_H */
