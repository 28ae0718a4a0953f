/*
 * test_layout.c - pins the layout. Every door and segment written by
 * one build is read by others (the library of one release, the monitor of
 * another), so any change of an offset or size must be deliberate: change
 * VR_LAYOUT_VERSION and the numbers here together.
 */
#include <stddef.h>

#include "registry/layout.h"
#include "tests/test.h"

#define OFF(t, f, v) ASSERT_EQ(offsetof(struct t, f), v)

int main(void)
{
	ASSERT_EQ(VR_LAYOUT_VERSION, 11);
	ASSERT_UEQ(VR_LAYOUT_MAGIC, 0x3147524c54434d56ULL);
	ASSERT_EQ(VR_SLOTS, 1024);
	ASSERT_EQ(VR_MAX_DEVICES, 64);

	ASSERT_EQ(sizeof(struct vr_hdr_dev), 48);
	OFF(vr_hdr_dev, uuid, 0);
	OFF(vr_hdr_dev, cap, 16);
	OFF(vr_hdr_dev, total, 24);
	OFF(vr_hdr_dev, peak, 32);

	ASSERT_EQ(sizeof(struct vr_hdr), 4096);
	OFF(vr_hdr, magic, 0);
	OFF(vr_hdr, version, 8);
	OFF(vr_hdr, hdr_size, 12);
	OFF(vr_hdr, total_size, 16);
	OFF(vr_hdr, slot_count, 24);
	OFF(vr_hdr, slot_size, 28);
	OFF(vr_hdr, owner_uid, 32);
	OFF(vr_hdr, ndev, 36);
	OFF(vr_hdr, seq, 40);
	OFF(vr_hdr, created, 48);
	OFF(vr_hdr, growth, 56);
	OFF(vr_hdr, slot_hint, 60);
	OFF(vr_hdr, slots_hw, 64);
	OFF(vr_hdr, slot_next, 68);
	OFF(vr_hdr, group, 72);
	OFF(vr_hdr, limit_spec, 144);
	OFF(vr_hdr, lock, 272);
	OFF(vr_hdr, epoch, 336);
	OFF(vr_hdr, shm_key, 344);
	OFF(vr_hdr, shm_id, 352);
	OFF(vr_hdr, spill_budget, 360);
	OFF(vr_hdr, spilled, 368);
	OFF(vr_hdr, denials, 376); /* a pad word before #35: members that leave it 0 agree */
	OFF(vr_hdr, dev, 384);
	OFF(vr_hdr, lock.word, 272);
	OFF(vr_hdr_dev, check, 40);

	ASSERT_EQ(sizeof(struct vramctl_counts), 48);
	OFF(vramctl_counts, in_use, 0);
	OFF(vramctl_counts, peak, 8);
	OFF(vramctl_counts, denied_count, 16);
	OFF(vramctl_counts, last_denied, 24);
	OFF(vramctl_counts, spilled, 32);
	OFF(vramctl_counts, overhead, 40);

	ASSERT_EQ(sizeof(struct vr_slot), 768);
	OFF(vr_slot, state, 0);
	OFF(vr_slot, pid, 4);
	OFF(vr_slot, incarnation, 8);
	OFF(vr_slot, start_time, 16);
	OFF(vr_slot, nspid_outer, 24);
	OFF(vr_slot, uid, 28);
	OFF(vr_slot, host_pinned, 32);
	OFF(vr_slot, joined, 40);
	OFF(vr_slot, command, 48);
	OFF(vr_slot, growth, 176);
	OFF(vr_slot, flags, 180);
	OFF(vr_slot, ipc_ns, 184); /* #37, version 10 */
	OFF(vr_slot, wait, 192);
	OFF(vr_slot, lanes, 256);
	/* Waiting and parking (#36, version 11). */
	ASSERT_EQ(sizeof(struct vr_slot_wait), 64);
	OFF(vr_slot_wait, dev, 0);
	OFF(vr_slot_wait, park, 4);
	OFF(vr_slot_wait, bytes, 8);
	OFF(vr_slot_wait, claimed, 16);
	OFF(vr_slot_wait, since, 24);
	OFF(vr_slot_wait, ticket, 32);
	OFF(vr_slot_wait, parked_since, 40);
	OFF(vr_slot_wait, idle_since, 48);
	OFF(vr_slot_wait, flags, 56);
	ASSERT_EQ(sizeof(struct vr_hdr_wait), 32);
	OFF(vr_hdr, wait, 384 + 64 * 48 + 16 * 16);
	OFF(vr_hdr_wait, wake, 0);
	OFF(vr_hdr_wait, waiters, 4);
	OFF(vr_hdr_wait, tickets, 8);
	OFF(vr_hdr_wait, park_budget, 16);
	OFF(vr_hdr_wait, parked, 24);
	OFF(vr_counts_line, phantom, 48); /* #37, version 10 */
	OFF(vr_counts_line, parked, 56);
	ASSERT_EQ(sizeof(struct vr_lane), 64);

	/* The members' numbers, device by device, a cache line each. */
	ASSERT_EQ(sizeof(struct vr_counts_line), 64);
	ASSERT_UEQ(VR_COUNTS_OFFSET, 4096 + 1024 * 768);
	ASSERT_UEQ(VR_COUNTS_OFFSET % 64, 0);
	/* The cap changes (`vramctl limit`), after them. */
	ASSERT_EQ(sizeof(struct vr_change), 56);
	OFF(vr_change, when, 0);
	OFF(vr_change, uid, 8);
	OFF(vr_change, pid, 12);
	OFF(vr_change, uuid, 16);
	OFF(vr_change, old_cap, 32);
	OFF(vr_change, new_cap, 40);
	OFF(vr_change, check, 48);
	OFF(vr_changes, count, 0);
	OFF(vr_changes, count_check, 8);
	OFF(vr_changes, c, 64);
	ASSERT_UEQ(VR_CHANGES_OFFSET, 4096 + 1024 * 768 + 64 * 1024 * 64);
	/* The members' identity records (version 9), a cache line apart. */
	ASSERT_EQ(sizeof(struct vr_ident), 896);
	OFF(vr_ident, pid, 0);
	OFF(vr_ident, start_time, 8);
	OFF(vr_ident, cgns, 16);
	OFF(vr_ident, check, 24);
	OFF(vr_ident, cgroup, 32);
	OFF(vr_ident, pod_name, 480);
	OFF(vr_ident, pod_namespace, 734);
	OFF(vr_ident, container_name, 798);
	ASSERT_UEQ(VR_IDENT_OFFSET, 4096 + 1024 * 768 + 64 * 1024 * 64 + 64 + 16 * 56);
	ASSERT_UEQ(VR_IDENT_OFFSET % 64, 0);
	ASSERT_UEQ(VR_SEGMENT_SIZE, 4096 + 1024 * 768 + 64 * 1024 * 64 + 64 + 16 * 56 + 1024 * 896);
	ASSERT_UEQ(VR_SEGMENT_SIZE, 5903296); /* as docs/architecture.md says */

	/* Books in a memfd: the door says so, and members say where theirs is. */
	ASSERT_EQ(VR_SHM_ID_MEMFD, -2);
	ASSERT_EQ(sizeof(struct vr_books_ref), 24);
	OFF(vr_books_ref, tag, 0);
	OFF(vr_books_ref, pid, 4);
	OFF(vr_books_ref, fd, 8);
	OFF(vr_books_ref, key, 16);
	ASSERT_EQ(vr_slot_books_byte(0), 4096 + 8);
	ASSERT_EQ(vr_slot_books_byte(1) - vr_slot_live_byte(1), 8);
	ASSERT(vr_slot_books_byte(0) + 24 <= vr_slot_live_byte(1));
	/* Who was a member, beside it; the books' ghosts in the header's
	 * padding (#37: the version stays). */
	ASSERT_EQ(sizeof(struct vr_member_ref), 24);
	OFF(vr_member_ref, tag, 0);
	OFF(vr_member_ref, host_pid, 4);
	OFF(vr_member_ref, start_time, 8);
	OFF(vr_member_ref, key, 16);
	ASSERT_EQ(vr_slot_member_byte(0), 4096 + 64);
	ASSERT(vr_slot_books_byte(0) + 24 <= vr_slot_member_byte(0));
	ASSERT(vr_slot_member_byte(0) + 24 <= vr_slot_live_byte(1));
	ASSERT_EQ(VR_GHOSTS, 16);
	ASSERT_EQ(sizeof(struct vr_ghost), 16);
	OFF(vr_ghost, host_pid, 0);
	OFF(vr_ghost, start_time, 8);
	OFF(vr_hdr, ghosts, 384 + 64 * 48);
	static unsigned char seg[VR_SEGMENT_SIZE];
	struct vr_hdr *h = (struct vr_hdr *)(void *)seg;
	ASSERT_UEQ((size_t)((unsigned char *)vr_counts_at(h, 3, 2) - seg),
	           VR_COUNTS_OFFSET + (2 * 1024 + 3) * 64);
	ASSERT_UEQ((size_t)((unsigned char *)vr_slot_at(h, 3) - seg), 4096 + 3 * 768);

	/* The liveness bytes stay where version 5 had them (layout.h). */
	ASSERT_EQ(vr_slot_live_byte(0), 4096);
	ASSERT_EQ(vr_slot_pid_byte(3), 4096 + 3 * 3264 + 1);
	printf("ok\n");
	return 0;
}
