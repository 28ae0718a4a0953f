/*
 * lookup.h - which pointer the program gets for a driver or NVML symbol it
 * looks up (lookup.c): the matching wrapper, or the driver's own.
 */
#ifndef VRAMCTL_HOOK_LOOKUP_H
#define VRAMCTL_HOOK_LOOKUP_H

/* What dlsym on a handle hands the program for the driver's or NVML's
 * pointer real: the matching wrapper, or real itself. */
void *vr_lookup_substitute(void *real, const char *name);

#endif /* VRAMCTL_HOOK_LOOKUP_H */
