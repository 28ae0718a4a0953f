/*
 * segment.c - a group's books in memory (layout.h): making them (a sealed
 * memfd: memfd.c; a System V segment where no memfd of their size can be
 * made), naming them in the door, attaching a segment checked, mapping
 * their pages ahead, and unmapping them.
 *
 * Up to layout version 8 the books were a System V segment, and a memfd
 * only when none could be made. A segment is named by an id of one IPC
 * namespace: two containers, each with its own (podman's default, a pod
 * without hostIPC), could not share a group, and the second split it
 * (issue 37). A memfd is handed over through the group's socket
 * (handover.c) to any process that reaches the registry directory, in any
 * namespace; so the books are a memfd, and a segment only where a memfd of
 * their size cannot be made: a file size limit (`ulimit -f`) below it
 * (growing the memfd past it would raise SIGXFSZ and kill the program), or
 * no memfd at all. Such a group is shared within one IPC namespace, as
 * before, and read from outside it by a privileged reader (ipcns.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/shm.h>
#include <unistd.h>

#include "registry/door.h"
#include "registry/memfd.h"
#include "registry/segment.h"
#include "registry/util.h"

struct vr_hdr *vr_segment_attach(const struct vr_hdr *door, int rdonly)
{
	int id = door->shm_id;
	struct shmid_ds ds;
	if (id < 0 || shmctl(id, IPC_STAT, &ds) < 0)
		return NULL;
	if ((ds.shm_perm.uid != vr_owner() && !(rdonly && geteuid() == 0)) ||
	    (ds.shm_perm.mode & 077) || ds.shm_segsz != VR_SEGMENT_SIZE)
		return NULL;
	void *p = shmat(id, NULL, rdonly ? SHM_RDONLY : 0);
	if (p == (void *)-1)
		return NULL;
	struct vr_hdr *h = p;
	const char *why;
	if (vr__header_check(h, VR_HDR_SIZE, &why) != 0 || h->shm_key != door->shm_key ||
	    memcmp(h->group, door->group, sizeof(h->group)) != 0) {
		shmdt(p);
		return NULL;
	}
	return h;
}

/* Maps [off, off + len) of the segment in one call (rounded out to pages). */
static void populate(const struct vr_hdr *h, uint64_t off, uint64_t len, int write)
{
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
	long sz = sysconf(_SC_PAGESIZE);
	if (sz <= 0)
		return;
	uint64_t page = (uint64_t)sz, end = (off + len + page - 1) & ~(page - 1);
	off &= ~(page - 1);
	(void)madvise((unsigned char *)h + off, end - off,
	              write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
	(void)h;
	(void)off;
	(void)len;
	(void)write;
#endif
}

void vr_segment_prefault(const struct vr_hdr *h, uint32_t slots, int write)
{
	/* Only the slots ever used, and their numbers on the group's devices:
	 * the rest are never read. Best effort (Linux 5.14+; elsewhere the
	 * pages fault in one by one as before). */
	uint32_t hw = vr_hdr_hw(h), ndev = vr_hdr_ndev(h);
	if (slots > VR_SLOTS)
		slots = VR_SLOTS;
	if (slots > hw)
		hw = slots;
	populate(h, 0, VR_SLOTS_OFFSET + (uint64_t)hw * sizeof(struct vr_slot), write);
	for (uint32_t d = 0; d < ndev; d++)
		populate(h,
		         VR_COUNTS_OFFSET + (uint64_t)d * VR_SLOTS * sizeof(struct vr_counts_line),
		         (uint64_t)hw * sizeof(struct vr_counts_line), write);
}

void vr_segment_prefault_ident(const struct vr_hdr *h)
{
	populate(h, VR_IDENT_OFFSET, (uint64_t)vr_hdr_hw(h) * sizeof(struct vr_ident), 0);
}

void vr_segment_detach(struct vr_hdr *h)
{
	/* shmdt fails (EINVAL) where no segment is attached: a memfd's books. */
	if (h && shmdt(h) != 0)
		munmap(h, VR_SEGMENT_SIZE);
}

int vr_segment_create(int fd, const struct vr_join_opts *o, struct vr_hdr **out, int *mfd)
{
	*mfd = -1;
	void *p;
	int id = VR_SHM_ID_MEMFD, e = vr_memfd_make((struct vr_hdr **)&p, mfd);
	if (e < 0) {
		id = shmget(IPC_PRIVATE, VR_SEGMENT_SIZE, IPC_CREAT | IPC_EXCL | 0600);
		if (id < 0)
			return -errno;
		/* Root makes it for the user whose books these are (vr_owner). */
		struct shmid_ds ds;
		if (vr_owner() != geteuid() && shmctl(id, IPC_STAT, &ds) == 0) {
			ds.shm_perm.uid = vr_owner();
			if (shmctl(id, IPC_SET, &ds) != 0) {
				e = errno;
				shmctl(id, IPC_RMID, NULL);
				return -e;
			}
		}
		p = shmat(id, NULL, 0);
		/* Marked for removal at once: it lives while attached, and goes with
		 * its last member (Linux lets members attach it by id meanwhile). */
		e = p == (void *)-1 ? errno : 0;
		shmctl(id, IPC_RMID, NULL);
		if (e)
			return -e;
	}
	struct vr_hdr *h = p;
	vr__header_init(h, o);
	uint64_t key = 0;
	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
		key = vr_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
	h->shm_key = key;
	h->shm_id = id;
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, VR_LAYOUT_MAGIC, memory_order_release);
	/* The door names it: key and id are next to each other, one write. */
	unsigned char ids[offsetof(struct vr_hdr, pad1a) - offsetof(struct vr_hdr, shm_key)];
	memcpy(ids, (unsigned char *)h + offsetof(struct vr_hdr, shm_key), sizeof(ids));
	if (pwrite(fd, ids, sizeof(ids), offsetof(struct vr_hdr, shm_key)) !=
	    (ssize_t)sizeof(ids)) {
		e = errno ? errno : EIO;
		vr_segment_detach(h);
		if (*mfd >= 0)
			close(*mfd);
		*mfd = -1;
		return -e;
	}
	*out = h;
	return 0;
}
