/*
 * test_joincap.c - a cap asked for is never lost (issue 29): the group's
 * first member caps one GPU only; a joiner that asks for a cap on every GPU
 * is told (-EPERM) on the GPU the group left uncapped, and keeps its own
 * books there (src/hook); where the group has a cap, the group's applies.
 */
#include <errno.h>
#include <stdint.h>

#include "tests/registry/regtest.h"

static const unsigned char gpu0[VR_UUID_LEN] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
static const unsigned char gpu1[VR_UUID_LEN] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

int main(void)
{
	const char *dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	struct vr_join_opts first = {.dir = dir, .group = "onegpu", .limit_spec = "0=1000"};
	vr_member *a = join_or_fail(&first);
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(a, gpu0, 1000, &cap), 0);
	ASSERT_UEQ(cap, 1000);
	ASSERT_EQ(vr_device(a, gpu1, UINT64_MAX, &cap), 1);
	ASSERT_UEQ(cap, UINT64_MAX);

	struct vr_join_opts every = {.dir = dir, .group = "onegpu", .limit_spec = "500"};
	vr_member *b = NULL;
	char err[256];
	int differs = 0;
	ASSERT_EQ(vr_join(&every, &b, &differs, err, sizeof(err)), 0);
	ASSERT_EQ(differs, 1);
	/* GPU 0: the group's cap applies (it has one). */
	ASSERT_EQ(vr_device(b, gpu0, 500, &cap), 0);
	ASSERT_UEQ(cap, 1000);
	/* GPU 1: uncapped in the group, capped as asked: never silently lost. */
	ASSERT_EQ(vr_device(b, gpu1, 500, &cap), -EPERM);
	/* Asking for no cap there is fine. */
	ASSERT_EQ(vr_device(b, gpu1, UINT64_MAX, &cap), 1);
	ASSERT_UEQ(cap, UINT64_MAX);
	ASSERT(vr_damaged(b) == NULL);
	vr_leave(b);
	vr_leave(a);
	printf("ok\n");
	return 0;
}
