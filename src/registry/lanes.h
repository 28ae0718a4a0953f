/*
 * lanes.h - threads' spare bytes (lanes.c).
 */
#ifndef VRAMCTL_REGISTRY_LANES_H
#define VRAMCTL_REGISTRY_LANES_H

#include "registry/member.h"

/* Gives this member lanes (at most one member per process has them). */
void vr_lanes_attach(vr_member *m);
/* Before m is freed: its lanes are no longer used. */
void vr_lanes_detach(vr_member *m);

#endif /* VRAMCTL_REGISTRY_LANES_H */
