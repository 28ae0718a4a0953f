/*
 * fsize.c - the file size limit against a file about to be written.
 */
#include <sys/resource.h>

#include "common/fsize.h"

uint64_t vr_fsize_below(uint64_t bytes)
{
	struct rlimit fl;
	if (getrlimit(RLIMIT_FSIZE, &fl) != 0 || fl.rlim_cur == RLIM_INFINITY ||
	    fl.rlim_cur >= (rlim_t)bytes)
		return 0;
	/* A limit of 0 bytes still makes any write fail: report it as 1. */
	return fl.rlim_cur ? (uint64_t)fl.rlim_cur : 1;
}
