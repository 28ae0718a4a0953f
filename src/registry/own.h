/*
 * own.h - a process's own books, shown to monitors.
 *
 * A capped process that cannot join its group (the registry directory is
 * another user's, the group's books cannot be handed over, a device the
 * group leaves uncapped, a group above the site's maximum) keeps books of
 * its own: its cap holds for it alone. Nothing in the registry directory
 * says so, and a monitor would show it as uncapped. So such a process
 * publishes its books: a sealed memfd (VR_OWN_NAME) it keeps open, holding
 * its group's name, why it is alone, and for each such device its cap and
 * what it holds. A monitor finds it among the process's open files
 * (/proc/PID/fd: the kernel shows it to the process's own user and to a
 * reader with CAP_SYS_PTRACE) and reads it with pread: it cannot be
 * truncated, and only the process itself can have put it in its own file
 * table, so it is the process's own word. A program that closes every
 * descriptor it did not open hides it (the cap still holds).
 */
#ifndef VRAMCTL_REGISTRY_OWN_H
#define VRAMCTL_REGISTRY_OWN_H

#include <stdint.h>
#include <sys/types.h>

#include "registry/layout.h"

#define VR_OWN_NAME    "vramctl-own-books"
#define VR_OWN_MAGIC   0x4e574f4c54434d56ULL /* "VMCTLOWN" read little-endian */
#define VR_OWN_VERSION 1u
#define VR_OWN_SIZE    8192u
#define VR_OWN_WHY     512

/* One device the process keeps its own books for. Its in_use and peak are
 * written by the process (relaxed stores), read by monitors. */
struct vr_own_dev {
	unsigned char uuid[VR_UUID_LEN];
	uint64_t cap; /* UINT64_MAX: none (never published) */
	uint64_t in_use, peak;
	uint64_t overhead; /* the part of in_use charged for its overhead on the card */
	uint64_t pad[2];
};

struct vr_own {
	uint64_t magic; /* written last: the record is whole once it has it */
	uint32_t version;
	uint32_t ndev; /* dev[0, ndev) are filled (stored with release) */
	int32_t pid;   /* getpid(): its own namespace's view */
	uint32_t pad0;
	uint64_t start_time; /* /proc/self/stat field 22 */
	char group[VR_GROUP_FIELD];
	char why[VR_OWN_WHY]; /* why it is alone, in the words it said it in */
	unsigned char pad1[24];
	struct vr_own_dev dev[VR_MAX_DEVICES];
};
_Static_assert(sizeof(struct vr_own) <= VR_OWN_SIZE, "a process's own books fit their memfd");

/* The publisher (the library), once it keeps its own books: a sealed memfd
 * of VR_OWN_SIZE bytes, close-on-exec, mapped shared. Returns the mapping
 * and *fd, or NULL (nothing published: the cap holds all the same; also
 * under a file size limit below VR_OWN_SIZE, which sizing it would pass). */
struct vr_own *vr_own_publish(const char *group, const char *why, int *fd);

/* The entry of device uuid with cap, added when new. NULL: no room. */
struct vr_own_dev *vr_own_device(struct vr_own *o, const unsigned char uuid[VR_UUID_LEN],
                                 uint64_t cap);

/*
 * The reader: the own books that process pid (proc_root's PID, NULL:
 * /proc) keeps open and that name it (its start time), copied into out.
 * Returns 1, 0 when it keeps none (or none that can be read: another
 * user's process without CAP_SYS_PTRACE), never fails otherwise. Strings
 * terminated, ndev clamped.
 */
int vr_own_find(const char *proc_root, pid_t pid, struct vr_own *out);

#endif /* VRAMCTL_REGISTRY_OWN_H */
