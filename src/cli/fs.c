/*
 * fs.c - file-system helpers (fs.h).
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli/fs.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

int cli_remove_tree(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
