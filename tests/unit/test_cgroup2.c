/*
 * test_cgroup2.c - the cgroup v2 facts behind the driver's per-cgroup
 * limits (common/cgroup2.c) and the enforcers' words (common/enforce.c): a
 * process's cgroup v2 path from /proc/PID/cgroup's text (v2 only, hybrid,
 * v1 only), NVML's name for it, the walk up its ancestors (stopped early
 * when told), "library|driver|both".
 */
#include <stdio.h>
#include <string.h>

#include "common/cgroup2.h"
#include "common/enforce.h"
#include "tests/test.h"

static char seen[8][300];
static int nseen;

static int record(const char *ns, void *ctx)
{
	snprintf(seen[nseen++], sizeof(seen[0]), "%s", ns);
	return ctx && nseen == *(int *)ctx ? 7 : 0;
}

int main(void)
{
	char out[VR_CGROUP2_LEN];
	ASSERT_EQ(vr_cgroup2_parse("0::/system.slice/job_7/step_0\n", out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "/system.slice/job_7/step_0");
	/* Hybrid: v1 lines first, the v2 one last. */
	ASSERT_EQ(vr_cgroup2_parse("9:name=systemd:/\n4:memory:/x\n0::/\n", out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "/");
	/* v1 only: none. */
	ASSERT_EQ(vr_cgroup2_parse("4:memory:/x\n1:cpu:/\n", out, sizeof(out)), -1);
	ASSERT_STR_EQ(out, "");
	ASSERT_EQ(vr_cgroup2_parse("0::/a/b\n", out, 4), -1); /* does not fit */

	ASSERT_EQ(vr_cgroup2_ns("/a/b", out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "/sys/fs/cgroup/a/b");
	ASSERT_EQ(vr_cgroup2_ns("/", out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "/sys/fs/cgroup");
	ASSERT_EQ(vr_cgroup2_ns("/a/b", out, 10), -1);

	ASSERT_EQ(vr_cgroup2_walk("/a/b/c", record, NULL), 0);
	ASSERT_EQ(nseen, 4);
	ASSERT_STR_EQ(seen[0], "/sys/fs/cgroup/a/b/c");
	ASSERT_STR_EQ(seen[1], "/sys/fs/cgroup/a/b");
	ASSERT_STR_EQ(seen[2], "/sys/fs/cgroup/a");
	ASSERT_STR_EQ(seen[3], "/sys/fs/cgroup");
	nseen = 0;
	int stop = 2;
	ASSERT_EQ(vr_cgroup2_walk("/a/b/c", record, &stop), 7);
	ASSERT_EQ(nseen, 2);
	nseen = 0;
	ASSERT_EQ(vr_cgroup2_walk("relative", record, NULL), 0);
	ASSERT_EQ(nseen, 0);

	enum vr_enforce e;
	ASSERT_EQ(vr_enforce_parse("library", &e), 0);
	ASSERT_EQ(e, VR_ENFORCE_LIBRARY);
	ASSERT_EQ(vr_enforce_parse("both", &e), 0);
	ASSERT(e & VR_ENFORCE_DRIVER && e & VR_ENFORCE_LIBRARY);
	ASSERT_EQ(vr_enforce_parse("driver", &e), 0);
	ASSERT_STR_EQ(vr_enforce_name(e), "driver");
	ASSERT_EQ(vr_enforce_parse("Driver", &e), -1);
	ASSERT_EQ(vr_enforce_parse(NULL, &e), -1);
	printf("ok\n");
	return 0;
}
