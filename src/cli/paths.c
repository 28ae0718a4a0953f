/*
 * paths.c - where an installed vramctl finds its own files, relative to
 * the binary so that every layout is relocatable:
 *
 *   build tree     $(O)/vramctl, $(O)/libvramctl.so, $(O)/sim/
 *   make install   PREFIX/bin/vramctl, PREFIX/lib/vramctl/
 *   Debian         /usr/bin/vramctl, /usr/lib/<triplet>/vramctl/ (a private
 *                  directory, as Debian keeps preload libraries)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/libexec.h"
#include "cli/paths.h"
#include "launch/launch.h"

/* Set by the Makefile (dpkg-architecture); empty where there is none. */
#ifndef VR_MULTIARCH
#define VR_MULTIARCH ""
#endif

int cli_find_libfile(const char *rel, char *out, size_t len)
{
	static const char *const dirs[] = {"", "../lib/vramctl/",
	                                   "../lib/" VR_MULTIARCH "/vramctl/"};
	char self[PATH_MAX], path[PATH_MAX];

	if (vr_self_dir(self, sizeof self) < 0)
		return -1;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(path, sizeof path, "%s%s", dirs[i], rel);
		if (vr_found(self, path, out, len))
			return 0;
	}
	snprintf(out, len, "%s, %s/../lib/vramctl or %s/../lib/%s/vramctl", self, self, self,
	         VR_MULTIARCH);
	return -1;
}

/* The library folder of cli_find_libfile: a build tree, make install, the
 * Debian package. */
int cli_find_library(char *out, size_t len, char *err, size_t errlen)
{
	const char *env = getenv(VR_ENV_LIBRARY);
	char cand[PATH_MAX + 64];

	if (env && *env) {
		if (!realpath(env, out) || strlen(out) >= len) {
			snprintf(err, errlen, "%s='%s': %s", VR_ENV_LIBRARY, env,
			         strerror(errno ? errno : ENAMETOOLONG));
			return -1;
		}
		return 0;
	}
	if (cli_find_libfile(VR_LIBRARY_NAME, cand, sizeof(cand)) < 0 || !realpath(cand, out)) {
		snprintf(err, errlen, "cannot find %s (looked in %s); set %s", VR_LIBRARY_NAME,
		         cand, VR_ENV_LIBRARY);
		return -1;
	}
	return 0;
}
