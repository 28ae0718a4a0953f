/*
 * ipcns.c - attaching a group's segment from a live member's IPC namespace
 * (ipcns.h).
 *
 * A segment is found by its id, and ids are per IPC namespace: a member in
 * a container of its own (podman's default, a pod without hostIPC) has its
 * books where the host cannot name them. A reader with CAP_SYS_ADMIN (in
 * its own user namespace and in the one owning the member's IPC namespace:
 * setns(2) asks both) takes a live member's PID from the door's classic
 * locks (F_GETLK names the holder in the reader's PID namespace), opens
 * /proc/PID/ns/ipc (ptrace read access: CAP_SYS_PTRACE for another user's
 * process), enters it with setns on this thread only, attaches with every
 * check of vr_segment_attach, and goes back. A PID reused meanwhile leads
 * to some other namespace, where no segment carries the door's random key
 * and group: the attach refuses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "registry/ipcns.h"
#include "registry/segment.h"

/* Namespaces tried per group at most, and locks looked at to find them. */
#define NS_TRIES   4
#define LOCK_LOOKS 64

/* 1 if CAP_SYS_ADMIN is in the calling thread's effective set. */
static int may_enter(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {{0}};
	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

/* Opens the reader's own namespace once; 0 if other namespaces may be read. */
static int prepare(struct vr_ipcns *ns)
{
	if (ns->state == 0) {
		ns->state = -1;
		if (!may_enter())
			return -1;
		int fd = open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0)
			return -1;
		if (fstat(fd, &st) < 0) {
			close(fd);
			return -1;
		}
		ns->own = fd;
		ns->ino = (uint64_t)st.st_ino;
		ns->dev = (uint64_t)st.st_dev;
		ns->state = 1;
	}
	return ns->state == 1 ? 0 : -1;
}

/*
 * The next live member's PID as the reader sees it, from the classic lock
 * on a slot's PID byte at or after *at (OFD locks, the liveness bytes,
 * name no PID: they are skipped). 0 when there is none left.
 */
static pid_t next_member(int fd, long long *at, int *looks)
{
	long long end = vr_slot_live_byte(VR_SLOTS);
	while (*at < end && (*looks)++ < LOCK_LOOKS) {
		struct flock fl = {
		    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = *at, .l_len = end - *at};
		if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK || fl.l_len <= 0)
			return 0;
		/* Past this lock; a lock that starts before *at (it overlaps) moves on by one. */
		long long next = fl.l_start + fl.l_len;
		*at = next > *at ? next : *at + 1;
		if (fl.l_pid > 0)
			return fl.l_pid;
	}
	return 0;
}

/* Attaches in the namespace nfd (entered and left). NULL if not; *gone set
 * when the thread could not go back. */
static const struct vr_hdr *attach_in(struct vr_ipcns *ns, int nfd, const struct vr_hdr *door,
                                      int *gone)
{
	if (setns(nfd, CLONE_NEWIPC) != 0)
		return NULL;
	const struct vr_hdr *h = vr_segment_attach(door, 1);
	if (setns(ns->own, CLONE_NEWIPC) != 0) {
		*gone = 1;
		vr_segment_detach((struct vr_hdr *)h);
		return NULL;
	}
	return h;
}

const struct vr_hdr *vr_ipcns_attach(struct vr_ipcns *ns, int fd, const struct vr_hdr *door,
                                     uint64_t *ns_ino, const char **why)
{
	*why = NULL;
	*ns_ino = 0;
	if (prepare(ns) < 0)
		return NULL;
	uint64_t tried[NS_TRIES];
	int ntried = 0, looks = 0;
	long long at = vr_slot_live_byte(0);
	pid_t pid;
	while (ntried < NS_TRIES && (pid = next_member(fd, &at, &looks)) > 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
		int nfd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (nfd < 0)
			continue;
		if (fstat(nfd, &st) < 0 ||
		    ((uint64_t)st.st_ino == ns->ino && (uint64_t)st.st_dev == ns->dev)) {
			close(nfd);
			continue;
		}
		int seen = 0;
		for (int i = 0; i < ntried; i++)
			seen |= tried[i] == (uint64_t)st.st_ino;
		if (seen) {
			close(nfd);
			continue;
		}
		tried[ntried++] = (uint64_t)st.st_ino;
		int gone = 0;
		const struct vr_hdr *h = attach_in(ns, nfd, door, &gone);
		close(nfd);
		if (gone) {
			/* This thread is in another namespace now: say so, and enter
			 * none again (what it attaches next is still checked). */
			close(ns->own);
			ns->state = -1;
			*why =
			    "could not go back to the reader's own IPC namespace; books in other "
			    "namespaces are no longer read";
			return NULL;
		}
		if (h) {
			*ns_ino = (uint64_t)st.st_ino;
			return h;
		}
	}
	return NULL;
}

void vr_ipcns_close(struct vr_ipcns *ns)
{
	if (ns->state == 1)
		close(ns->own);
	ns->state = 0;
}
