/*
 * park.h - the books of a parked member (park.c; the interface:
 * registry.h, "Parking").
 */
#ifndef VRAMCTL_REGISTRY_PARK_H
#define VRAMCTL_REGISTRY_PARK_H

#include "registry/member.h"

#endif /* VRAMCTL_REGISTRY_PARK_H */
