/*
 * fake_vgpu - a test stand-in for another preloaded library that replaces
 * dlsym, as HAMi-core's libvgpu.so does: its dlsym answers every lookup on
 * a handle with glibc's own, so when it comes before libvramctl.so in
 * LD_PRELOAD, programs that reach the driver through dlsym or
 * cuGetProcAddress get the driver's own functions. vramctl doctor must name
 * it as a conflict and its self-test must see those ways uncapped.
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stddef.h>

typedef void *(*dlsym_fn)(void *, const char *);

__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
	static dlsym_fn real;
	if (!real) {
		void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
		real = (dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.34");
		if (!real)
			real = (dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.2.5");
		if (!real)
			return NULL;
	}
	return real(handle, name);
}
