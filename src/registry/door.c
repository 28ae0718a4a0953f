/*
 * door.c - a group's door file, <dir>/<group>.vrg (layout.h): the one check
 * every opener makes of it, opening, creating and publishing it, the door's
 * own lock, and removing it at the end of a run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/fsize.h"
#include "common/text.h"
#include "registry/alive.h"
#include "registry/dir.h"
#include "registry/door.h"
#include "registry/handover.h"
#include "registry/knobs.h"
#include "registry/util.h"

/* The header's own consistency (a door's or a segment's), for a door file of
 * file_size bytes (a segment: its header's size). */
int vr__header_check(const struct vr_hdr *h, uint64_t file_size, const char **why)
{
	if (file_size < sizeof(*h)) {
		*why = "truncated (shorter than a door's header)";
		return -EBADMSG;
	}
	if (h->magic != VR_LAYOUT_MAGIC) {
		*why = "not a vramctl group's door (bad magic)";
		return -EBADMSG;
	}
	if (h->version != VR_LAYOUT_VERSION) {
		*why = "written by another vramctl version (layout version differs)";
		return -EPROTONOSUPPORT;
	}
	if (h->hdr_size != VR_HDR_SIZE || h->slot_size != sizeof(struct vr_slot) ||
	    h->slot_count != VR_SLOTS || h->total_size != VR_SEGMENT_SIZE) {
		*why = "corrupt (sizes in the header do not match this version)";
		return -EBADMSG;
	}
	if (h->ndev > VR_MAX_DEVICES || h->slots_hw > h->slot_count) {
		*why = "corrupt (counts out of range)";
		return -EBADMSG;
	}
	return 0;
}

int vr_door_validate(int fd, const char *group, enum vr_door_use use, struct stat *st,
                     struct vr_hdr *hdr, const char **why)
{
	memset(st, 0, sizeof(*st));
	if (fstat(fd, st) < 0) {
		*why = "cannot stat";
		return -errno;
	}
	if (!S_ISREG(st->st_mode)) {
		*why = "not a regular file";
		return -EINVAL;
	}
	if (st->st_uid != vr_owner() && !(use == VR_DOOR_READ && geteuid() == 0)) {
		*why = "owned by another user";
		return -EPERM;
	}
	if (st->st_mode & 077) {
		*why = "readable or writable by others (mode is not 0600)";
		return -EPERM;
	}
	ssize_t got = pread(fd, hdr, sizeof(*hdr), 0);
	if (got < 0) {
		*why = "cannot read";
		return -errno;
	}
	uint64_t size = (uint64_t)st->st_size;
	if ((size_t)got < sizeof(*hdr))
		size = (uint64_t)got;
	int rc = vr__header_check(hdr, size, why);
	if (rc == 0 && (memchr(hdr->group, '\0', sizeof(hdr->group)) == NULL ||
	                strcmp(hdr->group, group) != 0)) {
		*why = "corrupt (it names another group)";
		rc = -EBADMSG;
	}
	return rc;
}

/*
 * rw, a door of another layout version (ours, 0600, opened for writing),
 * that no process holds a lock on: the leftover of a group whose members
 * are all gone (members of every version lock bytes of the door for their
 * life; the probe covers the whole file), e.g. a named group's door after
 * an upgrade. It is removed under its maker's lock (byte 0, which joiners
 * take before they write a door; joiners finding the same leftover at once
 * wait for it in turn), checked again to be the file at the path. Closes
 * rw. Returns 0 when it is gone or replaced (the caller looks again),
 * -EPROTONOSUPPORT when a process holds it.
 */
static int retire_other_version(int dfd, const char *name, int rw, const struct stat *st)
{
	int rc = -EPROTONOSUPPORT;
	struct stat now;
	struct flock rest = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1, .l_len = 0};
	if (vr_door_lock(rw, 1) == 0) {
		if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
		    now.st_dev != st->st_dev || now.st_ino != st->st_ino)
			rc = 0; /* removed or replaced while we waited */
		else if (fcntl(rw, F_OFD_GETLK, &rest) == 0 && rest.l_type == F_UNLCK &&
		         unlinkat(dfd, name, 0) == 0)
			rc = 0;
	}
	close(rw); /* drops the maker's lock */
	return rc;
}

/*
 * Opens an existing door for writing, never following a symlink and never
 * opening another user's file for writing: it is first opened read-only,
 * checked, then reopened read-write and checked to be the same file.
 * Returns an fd, -ENOENT if there is none (or it was replaced between the
 * two opens, or it was another version's leftover, now removed: the caller
 * looks again), or another negative errno.
 */
int vr_door_open(int dfd, const char *dir, const char *group, const char *name, char *err,
                 size_t errlen)
{
	int ro = vr_door_open_ro(dfd, dir, name, "books", err, errlen);
	if (ro < 0)
		return ro;
	struct stat st;
	struct vr_hdr hdr;
	const char *why = NULL;
	int rc = vr_door_validate(ro, group, VR_DOOR_WRITE, &st, &hdr, &why);
	if (rc != 0 && rc != -EPROTONOSUPPORT) {
		close(ro);
		if (rc == -EPERM && st.st_uid != vr_owner())
			vr_seterr(err, errlen,
			          "books %s/%s is owned by uid %u, not uid %u: refusing", dir, name,
			          (unsigned)st.st_uid, (unsigned)vr_owner());
		else
			vr_seterr(err, errlen, "books %s/%s: %s; remove it to start afresh", dir,
			          name, why);
		return rc;
	}
	int rw = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st2;
	int got = rw >= 0 && fstat(rw, &st2) == 0;
	int same = got && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino;
	if (!same || st2.st_size < st.st_size) {
		int e = rw < 0 ? errno : EAGAIN;
		if (rw >= 0)
			close(rw);
		close(ro);
		if (e == ENOENT || (got && !same))
			return -ENOENT; /* removed or replaced meanwhile: look again */
		vr_seterr(err, errlen, "books %s/%s changed while being opened", dir, name);
		return -e;
	}
	close(ro);
	if (rc == 0)
		return rw;
	/* Another version's door: a leftover is replaced, one in use refused. */
	if (retire_other_version(dfd, name, rw, &st) == 0)
		return -ENOENT;
	vr_seterr(err, errlen,
	          "books %s/%s: %s, and a process of that version is in it: the members of a "
	          "group must run one vramctl version (the books are replaced once none is left)",
	          dir, name, why);
	return rc;
}

void vr__header_init(struct vr_hdr *h, const struct vr_join_opts *o)
{
	h->version = VR_LAYOUT_VERSION;
	h->hdr_size = VR_HDR_SIZE;
	h->total_size = VR_SEGMENT_SIZE;
	h->slot_count = VR_SLOTS;
	h->slot_size = sizeof(struct vr_slot);
	h->owner_uid = (uint32_t)vr_owner();
	h->created = (uint64_t)time(NULL);
	h->growth = o->growth ? 1 : 0;
	h->spill_budget = o->spill_budget;
	h->wait.park_budget = o->park_budget;
	/* A checked name (vr_group_name_check) always fits. */
	(void)vr_text_copy(h->group, sizeof(h->group), o->group);
	snprintf(h->limit_spec, sizeof(h->limit_spec), "%s", o->limit_spec ? o->limit_spec : "");
}

/*
 * Creates the door under a temporary name and links it into place only
 * when complete (its segment comes later, vr_segment_create). Returns an
 * fd, -EEXIST if another process published the door first, or another
 * negative errno.
 */
int vr_door_create(int dfd, const char *dir, const char *name, const struct vr_join_opts *o,
                   char *err, size_t errlen)
{
	char tmp[128];
	char keep[VR_GROUP_NAME_MAX + 16];
	snprintf(keep, sizeof(keep), ".%s.vrg.keep", o->group);
	static struct vr_hdr zero;
	struct vr_hdr door = zero;
	vr__header_init(&door, o);
	door.shm_id = -1;
	door.magic = VR_LAYOUT_MAGIC;
	struct vr_tmp_file f = {.dfd = dfd,
	                        .dir = dir,
	                        .name = name,
	                        .what = "books",
	                        .stem = o->group,
	                        .mode = 0600,
	                        .buf = &door,
	                        .len = sizeof(door)};
	int rc, fd = vr_tmp_write(&f, tmp, sizeof(tmp), err, errlen);
	if (fd < 0)
		return fd;
	/* Root makes it for the user whose books these are (vr_owner). */
	if (vr_owner() != geteuid() && fchown(fd, vr_owner(), (gid_t)-1) != 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
		close(fd);
		vr_seterr(err, errlen, "cannot give books %s/%s to uid %u: %s", dir, name,
		          (unsigned)vr_owner(), strerror(-rc));
		return rc;
	}
	if (linkat(dfd, tmp, dfd, name, 0) < 0) {
		rc = -errno;
		unlinkat(dfd, tmp, 0);
		close(fd);
		if (rc != -EEXIST)
			vr_seterr(err, errlen, "cannot publish books %s/%s: %s", dir, name,
			          strerror(-rc));
		return rc;
	}
	/* Its second name, which brings it back if the first is removed while
	 * the group lives (vr_door_restore). It replaces a stale one at once;
	 * without it, the door still works. */
	if (renameat(dfd, tmp, dfd, keep) < 0)
		unlinkat(dfd, tmp, 0);
	return fd;
}

int vr_door_restore(int dfd, const char *group, const char *name)
{
	char keep[VR_GROUP_NAME_MAX + 16];
	snprintf(keep, sizeof(keep), ".%s.vrg.keep", group);
	int fd = openat(dfd, keep, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat st;
	struct vr_hdr hdr;
	const char *why = NULL;
	int ok = vr_door_validate(fd, group, VR_DOOR_WRITE, &st, &hdr, &why) == 0 &&
	         vr_others_alive(fd, VR_SLOTS) != 0;
	int rc = 0;
	if (ok && linkat(dfd, keep, dfd, name, 0) == 0)
		rc = 1;
	else if (ok && errno == EEXIST)
		rc = 1; /* another joiner put it back, or made a new one: look again */
	else if (!ok) {
		/* No live member (or not a door of ours): whoever removed the door
		 * meant the group to end. Only if it is still the one we looked at. */
		struct stat now;
		if (fstatat(dfd, keep, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
		    now.st_ino == st.st_ino)
			unlinkat(dfd, keep, 0);
	}
	close(fd);
	return rc;
}

int vr_door_lock(int fd, int lock)
{
	return vr_ofd_lock(fd, 0, lock, vr_wait_deadline(vr_now_ns()));
}

int vr_group_remove(const char *dir, const char *group)
{
	char dirbuf[PATH_MAX];
	char name[VR_GROUP_NAME_MAX + 8]; /* <group>.vrg */
	if (vr_group_name_check(group, NULL, 0) < 0)
		return -EINVAL;
	int rc = vr_dir_or_default(&dir, dirbuf, sizeof(dirbuf));
	if (rc < 0)
		return rc;
	int dfd = vr_open_registry_dir(dir, 0, NULL, 0);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%s.vrg", group);
	rc = unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	char keep[VR_GROUP_NAME_MAX + 16];
	snprintf(keep, sizeof(keep), ".%s.vrg.keep", group);
	if (unlinkat(dfd, keep, 0) == 0 && rc == -ENOENT)
		rc = 0;
	/* And its socket: the members still alive (a run's stragglers) make it
	 * again (serve.c), and a group lives while they do. */
	char sock[VR_HO_NAME_MAX];
	vr_ho_name(group, sock, sizeof(sock));
	if (unlinkat(dfd, sock, 0) == 0 && rc == -ENOENT)
		rc = 0;
	close(dfd);
	return rc;
}
