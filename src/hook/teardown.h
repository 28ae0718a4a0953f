/*
 * teardown.h - the registry's probe (teardown.c): does NVML still list a
 * dead member's process on a GPU, while the driver tears its contexts down?
 */
#ifndef VRAMCTL_HOOK_TEARDOWN_H
#define VRAMCTL_HOOK_TEARDOWN_H

/* Gives the registry the probe; called before the group is joined. */
void vr_teardown_setup(void);

#endif /* VRAMCTL_HOOK_TEARDOWN_H */
