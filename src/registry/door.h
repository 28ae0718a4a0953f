/*
 * door.h - a group's door file (door.c; layout in layout.h).
 */
#ifndef VRAMCTL_REGISTRY_DOOR_H
#define VRAMCTL_REGISTRY_DOOR_H

#include <stdint.h>
#include <sys/stat.h>

#include "registry/layout.h"
#include "registry/registry.h"

/* Who may use a door: a writer (member) or a reader (monitor). */
enum vr_door_use { VR_DOOR_WRITE, VR_DOOR_READ };

/*
 * The one check of a door, for members and monitors alike: a
 * regular file, owned by us (a reader running as root may read anyone's),
 * private (mode 0600), with a header that is this version's and names this
 * group, and as long as the header says. Reads the header into *hdr and
 * fills *st. Returns 0, or a negative errno with what is wrong in *why.
 */
int vr_door_validate(int fd, const char *group, enum vr_door_use use, struct stat *st,
                     struct vr_hdr *hdr, const char **why);

/* Opens an existing door for writing (-ENOENT: there is none) or creates
 * and publishes a new one (-EEXIST: another process published one first).
 * Return an fd or a negative errno, with a message in err. */
int vr_door_open(int dfd, const char *dir, const char *group, const char *name, char *err,
                 size_t errlen);
int vr_door_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                   char *err, size_t errlen);
/* A door removed while its group has live members (`rm`, a tmp cleaner)
 * comes back from its second name, .<group>.vrg.keep, made with it: returns
 * 1 when the door is back under name (or another took its place: look
 * again), 0 when there is nothing to bring back (no keep, or one whose group
 * has no live member, which is then removed: the group has ended). */
int vr_door_restore(int dfd, const char *group, const char *name);

/* Takes (lock 1, bounded like the group's lock) or drops (0) the door's
 * own lock (byte 0), held while a segment is found or made. */
int vr_door_lock(int fd, int lock);

/* Shared with segment.c: the header's own consistency (a door's or a
 * segment's) for a door file of file_size bytes (a segment: its header's
 * size): 0, or a negative errno with what is wrong in *why. And a new
 * header's identity, as the group's first member writes it. */
int vr__header_check(const struct vr_hdr *h, uint64_t file_size, const char **why);
void vr__header_init(struct vr_hdr *h, const struct vr_join_opts *o);

#endif /* VRAMCTL_REGISTRY_DOOR_H */
