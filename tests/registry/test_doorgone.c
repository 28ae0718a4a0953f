/*
 * test_doorgone.c - removing a group's door while members run does not
 * split the group (issue 29: `rm` or a tmp cleaner took <group>.vrg, and the
 * next member silently started a second group of the same name, two
 * 800-byte blocks under one 1,000-byte cap). The door has a second name in
 * the registry directory (.<group>.vrg.keep); a joiner that finds the door
 * gone puts it back from there while the group has live members, and
 * drops a keep whose group has none. The end of a run removes both.
 *
 * Both names removed under a live member (issue 37, item 6: the next member
 * started a second group of the name, silently): the group still answers
 * on its socket (.<group>.vrg.sock) with its door, and the next member
 * joins the same books through it. Its socket's name removed too (`rm` of
 * everything): a live member makes the socket again (within its 2 s look),
 * and the next member joins the same books.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/registry/regtest.h"

#define CAP 1000

static const char *dir;
static const unsigned char gpu0[VR_UUID_LEN] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};

static vr_member *member(const char *group)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1000"};
	return join_device_or_fail(&o, gpu0, CAP);
}

static int exists(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct stat st;
	return lstat(path, &st) == 0;
}

static void rm(const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ASSERT_EQ(unlink(path), 0);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");

	/* Removed under a live member: the next member joins the same books. */
	vr_member *a = member("doorgone");
	ASSERT_EQ(vr_reserve(a, 0, 800, NULL), 0);
	rm("doorgone.vrg");
	vr_member *b = member("doorgone");
	ASSERT(exists("doorgone.vrg"));
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(b, 0, 800, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 800);
	ASSERT_EQ(vr_reserve(b, 0, 200, NULL), 0);
	vr_release(b, 0, 200);
	vr_leave(b);
	vr_release(a, 0, 800);
	vr_leave(a);

	/* Removed after its last member left (doctor's advice for a group left
	 * behind): the keep is stale, the next member starts afresh. */
	rm("doorgone.vrg");
	vr_member *c = member("doorgone");
	ASSERT_EQ(vr_reserve(c, 0, 1000, NULL), 0);
	vr_release(c, 0, 1000);
	vr_leave(c);

	/* Both names removed under a live member: through the group's socket. */
	vr_member *d = member("doorgone");
	ASSERT_EQ(vr_reserve(d, 0, 800, NULL), 0);
	rm("doorgone.vrg");
	rm(".doorgone.vrg.keep");
	vr_member *e = member("doorgone");
	ASSERT_EQ(vr_reserve(e, 0, 800, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 800);
	ASSERT_EQ(vr_reserve(e, 0, 200, NULL), 0);
	vr_release(e, 0, 200);
	vr_leave(e);
	/* Every name removed: a member makes the socket again. */
	ASSERT(exists(".doorgone.vrg.sock"));
	rm(".doorgone.vrg.sock");
	int back = 0;
	for (int i = 0; i < 200 && !(back = exists(".doorgone.vrg.sock")); i++)
		usleep(50000);
	ASSERT(back);
	vr_member *f = member("doorgone");
	ASSERT_EQ(vr_reserve(f, 0, 800, &in_use), -ENOSPC);
	ASSERT_UEQ(in_use, 800);
	ASSERT(!exists("doorgone.vrg")); /* a door without names, found by its socket */
	vr_leave(f);
	vr_release(d, 0, 800);
	vr_leave(d);

	/* The end of a run removes both names. */
	ASSERT_EQ(vr_group_remove(dir, "doorgone"), 0);
	ASSERT(!exists("doorgone.vrg"));
	ASSERT(!exists(".doorgone.vrg.keep"));
	ASSERT(!exists(".doorgone.vrg.sock"));
	printf("ok\n");
	return 0;
}
