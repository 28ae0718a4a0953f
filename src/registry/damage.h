/*
 * damage.h - the audit of the books and detaching a member from them
 * (damage.c).
 */
#ifndef VRAMCTL_REGISTRY_DAMAGE_H
#define VRAMCTL_REGISTRY_DAMAGE_H

#include "common/compiler.h"
#include "registry/member.h"

/* Marks the member's books damaged (once): it says why through its notice
 * callback and keeps its own books under the caps it joined with. */
void vr_detach(vr_member *m, const char *fmt, ...) VR_PRINTF(2, 3);
/* A full check of the books against the slots. Lock held. Returns NULL or
 * what is wrong. */
const char *vr_audit_locked(vr_member *m);
/* What is wrong when a slot holds numbers no member could have written. */
extern const char vr__impossible[];
/* What is wrong when a freeze found phantom operations (lock.c, -EUCLEAN). */
extern const char vr__phantom[];

#endif /* VRAMCTL_REGISTRY_DAMAGE_H */
