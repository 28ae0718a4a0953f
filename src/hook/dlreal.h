/*
 * dlreal.h - the real dlsym (dlreal.c), for the library's own look-ups (the
 * driver's and NVML's symbols, the instance marker) and for the exported
 * dlsym's RTLD_NEXT and RTLD_DEFAULT paths (dlsym.c). Depends on nothing
 * else in the library.
 */
#ifndef VRAMCTL_HOOK_DLREAL_H
#define VRAMCTL_HOOK_DLREAL_H

/* The real dlsym on a real handle (never substituted). */
void *vr_dlsym_real(void *handle, const char *name);
/* The next dlsym after this library: read by dlsym.c's assembly thunk,
 * filled by the thunk or by vr_dlsym_real, whichever runs first. */
extern void *vr_dlsym_next;

#endif /* VRAMCTL_HOOK_DLREAL_H */
