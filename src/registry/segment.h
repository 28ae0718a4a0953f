/*
 * segment.h - a group's books in memory (segment.c; layout in layout.h):
 * a sealed memfd (memfd.h), handed over through the group's socket
 * (handover.h), or a System V segment where no memfd can be made.
 */
#ifndef VRAMCTL_REGISTRY_SEGMENT_H
#define VRAMCTL_REGISTRY_SEGMENT_H

#include <stdint.h>

#include "registry/layout.h"
#include "registry/registry.h"

/* Attaches the System V segment a door names, checked (owner, mode, size,
 * header, key, group), read-only or read-write. NULL: none that can be
 * used (gone, reused, not this group's, in another IPC namespace). */
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
/* Makes a group's books, maps them and names them in the door fd (their
 * key and shm_id): a sealed memfd, whose descriptor is *mfd (shm_id
 * VR_SHM_ID_MEMFD), or, where none of their size can be made (memfd.h,
 * vr_memfd_make), a System V segment (*mfd -1, shm_id its id). Door lock
 * held. Returns 0 or a negative errno. */
int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_hdr **out, int *mfd);

#endif /* VRAMCTL_REGISTRY_SEGMENT_H */
