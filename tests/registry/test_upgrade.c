/*
 * test_upgrade.c - a named group's door left by another layout version
 * (the group's members all gone, e.g. after an upgrade) is replaced once,
 * however many joiners find it at the same time, and they all end in one
 * group: every join succeeds, and the snapshot sees one group with all of
 * them and all their bytes. A joiner replacing a door another had just
 * made would split the group (members on a file nobody else finds).
 */
#include <fcntl.h>

#include "registry/layout.h"
#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

#define N      32
#define ROUNDS 5

static const unsigned char uuid0[VR_UUID_LEN] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};

static const char *dir;

static struct vr_join_opts opts(void)
{
	return (struct vr_join_opts){.dir = dir, .group = "up", .limit_spec = "1G"};
}

/* Leaves the group's door behind as another version's. */
static void stale_door(void)
{
	struct vr_join_opts o = opts();
	vr_leave(join_or_fail(&o));
	char path[4200];
	snprintf(path, sizeof(path), "%s/up.vrg", dir);
	int fd = open(path, O_WRONLY);
	ASSERT(fd >= 0);
	uint32_t older = VR_LAYOUT_VERSION - 1;
	ASSERT_EQ(pwrite(fd, &older, sizeof(older), 8), (ssize_t)sizeof(older));
	close(fd);
}

/* N joiners released at once on a stale door. */
static void round_once(void)
{
	stale_door();
	static struct crowd c;
	struct vr_join_opts o = opts();
	crowd_fork(&c, N, &o, uuid0, 1000);
	crowd_go(&c);
	for (int i = 0; i < N; i++)
		ASSERT_GE(crowd_slot(&c), 0);
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_EQ(s->groups[0].nmembers, N);
	ASSERT_UEQ(s->groups[0].dev[0].in_use, (uint64_t)N * 1000);
	vramctl_snapshot_free(s);
	crowd_release(&c);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	for (int r = 0; r < ROUNDS; r++)
		round_once();
	printf("ok\n");
	return 0;
}
