/*
 * memfd.c - a group's books in a sealed memfd (memfd.h): making them,
 * mapping a memfd checked, and the second way to them, through a live
 * member's /proc/PID/fd.
 *
 * A memfd has no name any other process can open. The first way to the
 * books is the group's socket (handover.c), which passes the memfd itself.
 * The second: each member keeps its descriptor open (close-on-exec) and
 * writes its PID and descriptor number in the door, at its slot's
 * reference (layout.h); a joiner opens /proc/PID/fd/FD of a live member,
 * which the kernel allows to the same user (its ptrace read check) and to
 * root, when the member is in its PID namespace and kept the descriptor.
 * Sealed against shrinking and growing, then against any further seal, the
 * memfd cannot be truncated under its mappers: no access to it ever
 * faults.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsize.h"
#include "registry/alive.h"
#include "registry/door.h"
#include "registry/memfd.h"
#include "registry/util.h"

/* The memfd's name: /proc/PID/fd/FD reads "/memfd:vramctl-books (deleted)". */
#define VR_MEMFD_NAME "vramctl-books"
/* Live members asked for the books, at most, per attach. */
#define VR_MEMFD_TRIES 8

int vr_memfd_make(struct vr_hdr **out, int *mfd)
{
	/* Growing it past the file size limit would raise SIGXFSZ. */
	if (vr_fsize_below(VR_SEGMENT_SIZE))
		return -EFBIG;
	int fd = memfd_create(VR_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Root makes them for the user whose books these are (vr_owner). */
	if (fchmod(fd, 0600) < 0 ||
	    (vr_owner() != geteuid() && fchown(fd, vr_owner(), (gid_t)-1) < 0) ||
	    ftruncate(fd, (off_t)VR_SEGMENT_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, VR_MEMFD_SEALS) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	void *p = mmap(NULL, VR_SEGMENT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	*out = p;
	*mfd = fd;
	return 0;
}

struct vr_hdr *vr_memfd_map(int fd, const struct vr_hdr *door, int rdonly)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & VR_MEMFD_SEALS) != VR_MEMFD_SEALS || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != VR_SEGMENT_SIZE ||
	    (st.st_uid != vr_owner() && !(rdonly && geteuid() == 0)) || (st.st_mode & 077))
		return NULL;
	void *p =
	    mmap(NULL, VR_SEGMENT_SIZE, PROT_READ | (rdonly ? 0 : PROT_WRITE), MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct vr_hdr *h = p;
	const char *why;
	if (vr__header_check(h, VR_HDR_SIZE, &why) != 0 || h->shm_key != door->shm_key ||
	    h->shm_id != VR_SHM_ID_MEMFD || memcmp(h->group, door->group, sizeof(h->group)) != 0) {
		munmap(p, VR_SEGMENT_SIZE);
		return NULL;
	}
	return h;
}

/* Opens descriptor fdnum of process pid, if it is a memfd of books. */
static struct vr_hdr *open_books(int pid, int fdnum, const struct vr_hdr *door, int rdonly,
                                 int *mfd)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fdnum);
	/* Only a memfd of ours is opened: the number may now name a FIFO or a
	 * device in that process, whose open could block or act. */
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	static const char want[] = "/memfd:" VR_MEMFD_NAME;
	if (n < (ssize_t)sizeof(want) - 1 || memcmp(link, want, sizeof(want) - 1) != 0)
		return NULL;
	int fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct vr_hdr *h = vr_memfd_map(fd, door, rdonly);
	if (h && mfd)
		*mfd = fd;
	else
		close(fd);
	return h;
}

/* The books from the live member of slot i, or NULL. */
static struct vr_hdr *from_slot(int doorfd, const struct vr_hdr *door, uint32_t i, int rdonly,
                                int *mfd)
{
	struct vr_books_ref ref;
	if (pread(doorfd, &ref, sizeof(ref), vr_slot_books_byte(i)) != (ssize_t)sizeof(ref) ||
	    ref.tag != VR_BOOKS_REF_TAG || ref.key != door->shm_key || ref.fd < 0 || ref.pid <= 0)
		return NULL;
	/* Its PID in our namespace: its classic lock names it (best effort;
	 * a lock of our own process reads as none), else its own view. */
	int pids[2] = {vr_slot_pid(doorfd, i), ref.pid};
	for (int k = 0; k < 2; k++) {
		if (pids[k] <= 0 || (k == 1 && pids[1] == pids[0]))
			continue;
		struct vr_hdr *h = open_books(pids[k], ref.fd, door, rdonly, mfd);
		if (h)
			return h;
	}
	return NULL;
}

struct vr_hdr *vr_memfd_attach(int doorfd, const struct vr_hdr *door, int rdonly, int *mfd)
{
	if (door->shm_id != VR_SHM_ID_MEMFD)
		return NULL;
	long long pos = vr_slot_live_byte(0), end = vr_slot_live_byte(VR_SLOTS);
	for (int t = 0; t < VR_MEMFD_TRIES && pos < end; t++) {
		/* The first live member's lock at or past pos, whoever holds it. */
		struct flock fl = {
		    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = pos, .l_len = end - pos};
		if (fcntl(doorfd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
			break;
		long long at = fl.l_start > pos ? fl.l_start : pos;
		uint32_t i = (uint32_t)((at - (long long)VR_HDR_SIZE) / VR_LIVE_STRIDE);
		if (i >= VR_SLOTS)
			break;
		pos = vr_slot_live_byte(i + 1);
		struct vr_hdr *h = from_slot(doorfd, door, i, rdonly, mfd);
		if (h)
			return h;
	}
	return NULL;
}

int vr_memfd_publish(int doorfd, uint32_t slot, int mfd, uint64_t key)
{
	struct vr_books_ref ref = {
	    .tag = VR_BOOKS_REF_TAG, .pid = (int32_t)getpid(), .fd = mfd, .key = key};
	long long off = vr_slot_books_byte(slot);
	/* Writing past the file size limit would raise SIGXFSZ in the program. */
	if (vr_fsize_below((uint64_t)off + sizeof(ref)))
		return -EFBIG;
	ssize_t n = pwrite(doorfd, &ref, sizeof(ref), off);
	return n == (ssize_t)sizeof(ref) ? 0 : n < 0 ? -errno : -EIO;
}
