/*
 * dlreal.c - the real dlsym, for vramctl's own look-ups (the driver's and
 * NVML's symbols, the instance marker) and for the exported dlsym's
 * RTLD_NEXT and RTLD_DEFAULT paths (dlsym.c). Depends on nothing else in
 * the library, so that loading the driver (real.c) never reaches back into
 * the ways in.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "hook/dlreal.h"

void *vr_dlsym_next;

/* Stands in for dlsym if glibc offered none (never seen): finds nothing. */
static void *dlsym_none(void *handle, const char *name)
{
	(void)handle;
	(void)name;
	return NULL;
}

/*
 * The real dlsym: the next definition after this library, so that another
 * interposer later in the search order keeps its place in the chain. dlvsym
 * is not interposed, so this is safe before any constructor has run, from
 * any thread (the result is the same for every caller). Never returns NULL.
 */
static void *dlsym_resolve(void)
{
	void *p = __atomic_load_n(&vr_dlsym_next, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!p)
		p = (void *)dlsym_none;
	__atomic_store_n(&vr_dlsym_next, p, __ATOMIC_RELEASE);
	return p;
}

/* The real dlsym on a handle (not RTLD_NEXT/RTLD_DEFAULT: see above). */
void *vr_dlsym_real(void *handle, const char *name)
{
	void *(*real)(void *, const char *) = (void *(*)(void *, const char *))dlsym_resolve();
	return real(handle, name);
}
