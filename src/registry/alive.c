/*
 * alive.c - whether members are alive: each member holds an OFD write lock
 * on its slot's liveness byte in the door for its whole life (layout.h,
 * vr_slot_live_byte); the kernel drops it when the last descriptor of that
 * open file goes away, i.e. at death, at exec (O_CLOEXEC) or at vr_leave.
 * A USED slot whose byte nobody holds belongs to a dead process.
 */
#include <errno.h>
#include <fcntl.h>

#include "registry/alive.h"
#include "registry/layout.h"

/* 1 if some open file description other than ours holds slot i's byte, 0 if
 * none does (its owner is gone), negative errno on error. */
int vr_slot_alive(int fd, uint32_t i)
{
	struct flock fl = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_live_byte(i), .l_len = 1};
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return -errno;
	return fl.l_type != F_UNLCK;
}

pid_t vr_slot_pid(int fd, uint32_t i)
{
	struct flock fl = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_pid_byte(i), .l_len = 1};
	if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK || fl.l_pid <= 0)
		return 0;
	return fl.l_pid;
}

int vr_others_alive(int fd, uint32_t self)
{
	/* One probe per side of our own slot: F_OFD_GETLK reports the first
	 * lock of anyone else in the range, whatever the slots' bytes say. */
	long long lo = vr_slot_live_byte(0), mine = vr_slot_live_byte(self);
	long long next = vr_slot_live_byte(self + 1), end = vr_slot_live_byte(VR_SLOTS);
	long long r[2][2] = {{lo, mine - lo}, {next, end - next}};
	for (int k = 0; k < 2; k++) {
		if (r[k][1] <= 0)
			continue;
		struct flock fl = {
		    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = r[k][0], .l_len = r[k][1]};
		if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type != F_UNLCK)
			return 1; /* alive, or cannot tell: assume alive */
	}
	return 0;
}

int vr_lock_word_alive(int fd, uint32_t word, const unsigned char *alive)
{
	uint32_t idx = word & VR_LOCK_SLOT_MASK;
	if (idx == 0 || idx > VR_SLOTS)
		return 0;
	if (alive)
		return alive[idx - 1] != 0;
	return vr_slot_alive(fd, idx - 1) != 0;
}
