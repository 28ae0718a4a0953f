/*
 * regpoke.c - writes into a live group's books the way a stray process of
 * the same user could, for the shell tests of damage (run_damaged.sh):
 *
 *   regpoke DIR GROUP lock WORD    the group's lock word (hex or decimal)
 *   regpoke DIR GROUP slot0        the lock id a member in slot 0 never uses
 *
 * Exit 0, or 1 with a message.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/member.h"

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: regpoke DIR GROUP lock WORD | slot0\n");
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.vrg", argv[1], argv[2]);
	int fd = open(path, O_RDONLY);
	struct vr_region_hdr door;
	if (fd < 0 || pread(fd, &door, sizeof(door), 0) != (ssize_t)sizeof(door)) {
		perror(path);
		return 1;
	}
	struct vr_region_hdr *h = vr_segment_attach(&door, 0);
	if (!h) {
		fprintf(stderr, "regpoke: no books for %s\n", path);
		return 1;
	}
	uint32_t w;
	if (!strcmp(argv[3], "lock") && argc == 5)
		w = (uint32_t)strtoul(argv[4], NULL, 0);
	else if (!strcmp(argv[3], "slot0"))
		w = 1 | VR_LOCK_TOKEN_MASK; /* slot 0, a token nobody draws in practice */
	else
		return 1;
	atomic_store((_Atomic uint32_t *)&h->lock.word, w);
	vr_segment_detach(h);
	return 0;
}
