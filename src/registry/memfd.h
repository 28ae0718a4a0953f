/*
 * memfd.h - a group's books in a sealed memfd (memfd.c; layout.h,
 * VR_SHM_ID_MEMFD).
 */
#ifndef VRAMCTL_REGISTRY_MEMFD_H
#define VRAMCTL_REGISTRY_MEMFD_H

#include <fcntl.h>
#include <stdint.h>

#include "registry/layout.h"

/* The seals a memfd of books carries: no process can ever change its size. */
#define VR_MEMFD_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* Makes the books in a new memfd of VR_SEGMENT_SIZE bytes (mode 0600,
 * close-on-exec, sealed: VR_MEMFD_SEALS) and maps it shared read-write.
 * Returns 0 with *out and its descriptor *mfd, or a negative errno: -EFBIG
 * when the file size limit (`ulimit -f`) is below that size (nothing
 * tried: growing it would raise SIGXFSZ in the program). */
int vr_memfd_make(struct vr_hdr **out, int *mfd);

/*
 * Maps the memfd fd, read-only or read-write, if it is the books the door
 * (header door) names: a memfd of VR_SEGMENT_SIZE bytes carrying
 * VR_MEMFD_SEALS, ours (a read-only reader running as root may read
 * anyone's), private (mode 0600), whose header is valid and carries the
 * door's key and group. NULL otherwise (fd is left open).
 */
struct vr_hdr *vr_memfd_map(int fd, const struct vr_hdr *door, int rdonly);

/*
 * Attaches, checked (vr_memfd_map), the memfd books that the door doorfd (header door)
 * names, through a live member's descriptor: the door's liveness locks say
 * which slots are alive, their references (vr_slot_books_byte) where each
 * keeps its descriptor, and /proc/PID/fd/FD opens it (same user, or root).
 * Asks a few live members at most. Read-only or read-write; *mfd gets the
 * descriptor (close-on-exec) when mfd is not NULL, else it is closed.
 * NULL: no live member could hand the books over.
 */
struct vr_hdr *vr_memfd_attach(int doorfd, const struct vr_hdr *door, int rdonly, int *mfd);

/* Says in the door where this member, in slot `slot`, keeps its descriptor
 * mfd of the books whose key is key. Best effort (never past the file size
 * limit). Returns 0 or a negative errno. */
int vr_memfd_publish(int doorfd, uint32_t slot, int mfd, uint64_t key);

#endif /* VRAMCTL_REGISTRY_MEMFD_H */
