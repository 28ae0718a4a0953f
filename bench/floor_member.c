/*
 * floor_member - the least a process can do to join a shared group at its
 * start, preloaded by start_bench beside vramctl's library to show the
 * floor under the 256-process figure: open the group's door, take an OFD
 * lock on a byte of its own (its liveness), attach the group's System V
 * segment, and write its header and its own slot. No books, no audit, no
 * driver. Does nothing unless start_bench set VR_FLOOR_DOOR, VR_FLOOR_SHM
 * and VR_FLOOR_SLOT (struct vr_slot's size: the same pages as vramctl's).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/shm.h>
#include <unistd.h>

#define SLOTS 1024

__attribute__((constructor)) static void floor_join(void)
{
	const char *door = getenv("VR_FLOOR_DOOR"), *id = getenv("VR_FLOOR_SHM"),
	           *slot = getenv("VR_FLOOR_SLOT");
	if (!door || !id || !slot)
		return;
	int fd = open(door, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	for (long i = 0; i < SLOTS; i++) {
		struct flock fl = {
		    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 4096 + i, .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &fl) != 0)
			continue;
		volatile char *p = shmat(atoi(id), NULL, 0);
		if (p != (void *)-1) {
			p[0] = 1;
			p[4096 + i * atol(slot)] = 1;
		}
		return; /* the lock lives until exit, with the descriptor */
	}
}
