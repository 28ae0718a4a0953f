/*
 * segment.h - a group's segment (segment.c; layout in layout.h).
 */
#ifndef VRAMCTL_REGISTRY_SEGMENT_H
#define VRAMCTL_REGISTRY_SEGMENT_H

#include <stdint.h>

#include "registry/layout.h"
#include "registry/registry.h"

/* Attaches the segment a door names, checked (owner, mode, size, header,
 * key, group), read-only or read-write. NULL: none that can be used (gone,
 * reused, or not this group's). */
struct vr_hdr *vr_segment_attach(const struct vr_hdr *door, int rdonly);
/* Detaches a segment, or unmaps a memfd's books. */
void vr_segment_detach(struct vr_hdr *h);
/* Maps the pages of the header and of the slots in use (at least the first
 * `slots`) in one system call (writable for a member, read-only for a
 * monitor): a process that has just attached would otherwise take a page
 * fault per slot it reads (a joiner's audit reads every slot, with the
 * group's lock held). */
void vr_segment_prefault(const struct vr_hdr *h, uint32_t slots, int write);
/* The same for a reader of the members' identity records (layout.h,
 * struct vr_ident) of the slots ever used. */
void vr_segment_prefault_ident(const struct vr_hdr *h);
/* Creates a group's segment, attaches it and names it in the door fd.
 * When the kernel has no room for one (memfd.h, vr_memfd_fallback), the
 * books are a sealed memfd instead, whose descriptor is *mfd (else -1) and
 * the door's shm_id VR_SHM_ID_MEMFD. Door lock held. Returns 0 or a
 * negative errno. */
int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_hdr **out, int *mfd);

#endif /* VRAMCTL_REGISTRY_SEGMENT_H */
