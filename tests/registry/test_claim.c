/*
 * test_claim.c - how a joiner finds its slot when others join at the same
 * time. Joiners at once all see the same used range; each used to try the
 * never-used slots after it in turn, every try an F_OFD_SETLK that fails
 * on a slot another joiner has just locked (and walks the door's whole
 * list of locks in the kernel): n joiners at once made O(n^2) tries. The
 * header's counter (slot_next) now hands each its own. And in a full
 * group a joiner used to try every live member's slot before the one a
 * leaver gave back (a join into 1,000 members took milliseconds); a free
 * slot names itself the next place to look, and free slots are tried
 * before used ones. This program counts the tries by defining fcntl (the
 * registry is linked in statically, so its calls come here).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

static const char *dir;
static int setlk_tries;

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (cmd == F_OFD_SETLK) {
		const struct flock *fl = arg;
		setlk_tries += fl->l_type == F_WRLCK;
	}
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

static vr_member *join(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	return join_or_fail(&o);
}

/* Joins, expecting slot `slot` within max_tries tries, and leaves. */
static void join_counted(const char *group, const char *what, int slot, int max_tries)
{
	setlk_tries = 0;
	vr_member *m = join(group);
	printf("%s: slot %d after %d tries\n", what, vr_slot_index(m), setlk_tries);
	ASSERT_EQ(vr_slot_index(m), slot);
	ASSERT_LE(setlk_tries, max_tries);
	vr_leave(m);
}

/* Locks the liveness bytes of slots [from, to) through an open file
 * description of its own, as joiners do between taking a slot and
 * entering the group. Returns the descriptor (closing it drops them). */
static int hold_slots(const char *group, uint32_t from, uint32_t to)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s.vrg", dir, group);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT(fd >= 0);
	for (uint32_t i = from; i < to; i++) {
		struct flock fl = {.l_type = F_WRLCK,
		                   .l_whence = SEEK_SET,
		                   .l_start = vr_slot_live_byte(i),
		                   .l_len = 1};
		ASSERT_EQ(fcntl(fd, F_OFD_SETLK, &fl), 0);
	}
	return fd;
}

/*
 * One member in slot 0; 20 joiners at once hold slots 1-20 and have each
 * counted one off slot_next. The next joiner takes slot 21 in two tries
 * (slot 0, its one used neighbour, then the counter's), not 22.
 */
static void test_joiners_at_once(void)
{
	vr_member *keeper = join("storm");
	ASSERT_EQ(vr_slot_index(keeper), 0);
	int held = hold_slots("storm", 1, 21);
	keeper->hdr->slot_next = 21;
	join_counted("storm", "beside 20 joiners", 21, 2);
	close(held);
	vr_leave(keeper);
}

/*
 * The counter is advisory: behind the used range (a joiner that does not
 * count it, a group started afresh) it is moved past it; out of range
 * (damage) it is not used, and the search over all slots still finds one.
 * Either way the slots in use stay compact.
 */
static void test_counter_advisory(void)
{
	vr_member *keeper = join("advisory");
	vr_member *second = join("advisory");
	ASSERT_EQ(vr_slot_index(second), 1);
	keeper->hdr->slot_next = 0; /* behind the used range */
	vr_member *third = join("advisory");
	ASSERT_EQ(vr_slot_index(third), 2);
	ASSERT_UEQ(keeper->hdr->slot_next, 3);
	keeper->hdr->slot_next = 0xfffffff0u; /* garbage */
	vr_member *fourth = join("advisory");
	ASSERT_EQ(vr_slot_index(fourth), 3);
	vr_leave(fourth);
	vr_leave(third);
	vr_leave(second);
	vr_leave(keeper);
	/* Nobody alive: the group starts afresh at slot 0, counter and all. */
	vr_member *again = join("advisory");
	ASSERT_EQ(vr_slot_index(again), 0);
	ASSERT_UEQ(again->hdr->slot_next, 1);
	vr_leave(again);
}

/* Slots [from, to) look like live members' to a joiner: held (by fd) and
 * marked used (no start time: their locks alone say they live). */
static int fake_members(vr_member *keeper, uint32_t from, uint32_t to)
{
	int fd = hold_slots("full", from, to);
	for (uint32_t i = from; i < to; i++)
		vr_slot_at(keeper->hdr, i)->state = VR_SLOT_USED;
	keeper->hdr->slots_hw = to;
	keeper->hdr->slot_next = to;
	return fd;
}

/*
 * A full group: slots 0-1023 live but for one a member has just left. The
 * next joiner takes that one at once; and with the hint lost (another
 * joiner moved it), after the 8 near probes, before any other live slot.
 */
static void test_full_group(void)
{
	vr_member *keeper = join("full");
	ASSERT_EQ(vr_slot_index(keeper), 0);
	int low = fake_members(keeper, 1, 600);
	vr_member *leaver = join("full");
	ASSERT_EQ(vr_slot_index(leaver), 600);
	int high = fake_members(keeper, 601, VR_SLOTS);
	vr_leave(leaver);
	join_counted("full", "full group", 600, 1);
	keeper->hdr->slot_hint = 17; /* lost */
	join_counted("full", "hint lost", 600, 9);
	close(high);
	close(low);
	vr_leave(keeper);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	test_joiners_at_once();
	test_counter_advisory();
	test_full_group();
	printf("ok\n");
	return 0;
}
