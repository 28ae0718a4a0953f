/*
 * wait.h - waiting for room in the group's books, and what a member says
 * about its idleness (wait.c; the interface: registry.h).
 */
#ifndef VRAMCTL_REGISTRY_WAIT_H
#define VRAMCTL_REGISTRY_WAIT_H

#include "registry/member.h"

#endif /* VRAMCTL_REGISTRY_WAIT_H */
