/*
 * ipcns.h - a reader's way to books in another IPC namespace (ipcns.c): a
 * container's segment lives in the container's IPC namespace, where the
 * host's reader cannot attach it by id; with CAP_SYS_ADMIN the reader
 * enters a live member's namespace for the attach only.
 */
#ifndef VRAMCTL_REGISTRY_IPCNS_H
#define VRAMCTL_REGISTRY_IPCNS_H

#include <stdint.h>

#include "registry/layout.h"

/* One snapshot's state: zero it before the first call, close it after. */
struct vr_ipcns {
	int own;      /* the reader's own IPC namespace, an open fd while state is 1 */
	int state;    /* 0: not asked yet, 1: may enter, -1: may not (or stopped) */
	uint64_t ino; /* the reader's own namespace's inode */
	uint64_t dev; /* and its device (nsfs) */
};

/*
 * Attaches, read-only and checked as vr_segment_attach does (owner, mode,
 * size, header, key, group), the segment that the door fd (header door)
 * names, from the IPC namespace of one of its live members when that is
 * not the reader's own. Only for a reader with CAP_SYS_ADMIN in its
 * effective set; the calling thread enters the namespace for the attach
 * alone and always goes back (the mapping stays: it belongs to the
 * address space). Returns the segment with *ns_ino set to the namespace's
 * inode, or NULL. *why is set when something must be said: the thread
 * could not go back to its own namespace (then no other namespace is
 * entered again with this state). Tries at most a few namespaces.
 */
const struct vr_hdr *vr_ipcns_attach(struct vr_ipcns *ns, int fd, const struct vr_hdr *door,
                                     uint64_t *ns_ino, const char **why);
void vr_ipcns_close(struct vr_ipcns *ns);

#endif /* VRAMCTL_REGISTRY_IPCNS_H */
