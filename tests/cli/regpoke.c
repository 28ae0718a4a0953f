/*
 * regpoke.c - writes into a live group's books the way a stray process of
 * the same user could, for the shell tests of damage (run_damaged.sh):
 *
 *   regpoke DIR GROUP lock WORD    the group's lock word (hex or decimal)
 *   regpoke DIR GROUP slot0        the lock id a member in slot 0 never uses
 *   regpoke DIR GROUP cap V        device 0's cap, alone
 *   regpoke DIR GROUP inuse V      device 0's in-use total, alone
 *   regpoke DIR GROUP members N    N slots past the ones in use marked as
 *                                  members (PIDs nobody has, no liveness
 *                                  lock: records of members not running)
 *   regpoke DIR GROUP ring         the cap changes' ring overwritten: a count
 *                                  of 2^64 - 1, a change of garbage
 *   regpoke DIR GROUP claim PID UUID
 *                                  joins the group, holds 100 MiB on device
 *                                  UUID, then says in its own slot that it
 *                                  is process PID (PID and start time: what
 *                                  /proc shows anyone) and lets go of its
 *                                  PID lock (its liveness lock stays); says
 *                                  "ready 1 PID" and holds until stdin closes
 *
 * Exit 0, or 1 with a message.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/size.h"
#include "tests/hold.h"
#include "registry/handover.h"
#include "registry/member.h"
#include "registry/memfd.h"
#include "registry/proc.h"
#include "registry/registry.h"
#include "registry/segment.h"
#include "registry/util.h"

/* A member that says it is another process (see the usage above). */
static int claim(const char *dir, const char *group, const char *pidtext, const char *uuidtext)
{
	unsigned char uuid[VR_UUID_LEN];
	uint64_t start, cap;
	pid_t pid = (pid_t)atoi(pidtext);
	char err[256];
	if (vr_parse_uuid(uuidtext, uuid) < 0 || vr_proc_start_time(NULL, pid, &start) < 0) {
		fprintf(stderr, "regpoke: claim: bad UUID or no process %s\n", pidtext);
		return 1;
	}
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1G"};
	vr_member *m;
	if (vr_join(&o, &m, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "regpoke: claim: %s\n", err);
		return 1;
	}
	int d = vr_device(m, uuid, 1ull << 30, &cap);
	if (d < 0 || vr_reserve(m, d, 100ull << 20, NULL) != 0) {
		fprintf(stderr, "regpoke: claim: device or reserve refused\n");
		return 1;
	}
	m->slot->pid = (int32_t)pid;
	m->slot->nspid_outer = (int32_t)pid;
	m->slot->start_time = start;
	snprintf(m->slot->command, sizeof(m->slot->command), "claimed");
	struct flock fl = {.l_type = F_UNLCK,
	                   .l_whence = SEEK_SET,
	                   .l_start = vr_slot_pid_byte(m->slot_idx),
	                   .l_len = 1};
	if (fcntl(m->fd, F_SETLK, &fl) != 0) {
		perror("regpoke: claim: unlock");
		return 1;
	}
	hold_ready(1);
	vr_leave(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[3], "claim"))
		return claim(argv[1], argv[2], argv[4], argv[5]);
	if (argc < 4) {
		fprintf(
		    stderr,
		    "usage: regpoke DIR GROUP lock WORD | slot0 | cap V | inuse V | members N\n");
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.vrg", argv[1], argv[2]);
	int fd = open(path, O_RDONLY);
	struct vr_hdr door;
	if (fd < 0 || pread(fd, &door, sizeof(door), 0) != (ssize_t)sizeof(door)) {
		perror(path);
		return 1;
	}
	/* The books as a joiner finds them: from the group's socket, else
	 * through a live member's /proc/PID/fd. */
	struct vr_ho_fds f;
	struct vr_hdr *h = NULL;
	int dfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 &&
	    vr_ho_fetch(dfd, argv[1], argv[2], geteuid(), vr_now_ns() + 2000000000ull, &f) == 0) {
		if (f.key == door.shm_key)
			h = vr_memfd_map(f.books, &door, 0);
		vr_ho_close(&f);
	}
	if (!h)
		h = door.shm_id >= 0 ? vr_segment_attach(&door, 0)
		                     : vr_memfd_attach(fd, &door, 0, NULL);
	if (!h) {
		fprintf(stderr, "regpoke: no books for %s\n", path);
		return 1;
	}
	uint64_t v = argc == 5 ? strtoull(argv[4], NULL, 0) : 0;
	if (!strcmp(argv[3], "lock") && argc == 5)
		atomic_store((_Atomic uint32_t *)&h->lock.word, (uint32_t)v);
	else if (!strcmp(argv[3], "slot0")) /* slot 0, a token nobody draws in practice */
		atomic_store((_Atomic uint32_t *)&h->lock.word, 1 | VR_LOCK_TOKEN_MASK);
	else if (!strcmp(argv[3], "cap") && argc == 5)
		atomic_store((_Atomic uint64_t *)&h->dev[0].cap, v);
	else if (!strcmp(argv[3], "inuse") && argc == 5)
		atomic_store((_Atomic uint64_t *)&h->dev[0].total, v); /* the whole total word */
	else if (!strcmp(argv[3], "members") && argc == 5) {
		uint32_t hw = vr_hdr_hw(h), n = 0;
		for (uint32_t i = hw; i < VR_SLOTS && n < v; i++, n++) {
			struct vr_slot *s = vr_slot_at(h, i);
			s->pid = (int32_t)(4000000 + i); /* past pid_max's default */
			s->nspid_outer = s->pid;
			s->start_time = 1;
			s->uid = (uint32_t)getuid();
			snprintf(s->command, sizeof(s->command), "forged-%u", i);
			atomic_store((_Atomic uint32_t *)&s->state, VR_SLOT_USED);
		}
		atomic_store((_Atomic uint32_t *)&h->slots_hw, hw + n);
	} else if (!strcmp(argv[3], "ring")) {
		struct vr_changes *ch = vr_changes_at(h);
		atomic_store((_Atomic uint64_t *)&ch->count, UINT64_MAX);
		memset(&ch->c[UINT64_MAX % VR_CHANGES], 0xe7, sizeof(ch->c[0]));
	} else
		return 1;
	vr_segment_detach(h);
	return 0;
}
