/*
 * test_upgrade.c - a named group's door left by another region version
 * (the group's members all gone, e.g. after an upgrade) is replaced once,
 * however many joiners find it at the same time, and they all end in one
 * group: every join succeeds, and the snapshot sees one group with all of
 * them and all their bytes. A joiner replacing a door another had just
 * made would split the group (members on a file nobody else finds).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/region.h"
#include "registry/registry.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define N      32
#define ROUNDS 5

static const unsigned char uuid0[VR_UUID_LEN] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};

static const char *dir;

static int join_group(vr_member **m, char *err, size_t errlen)
{
	struct vr_join_opts o = {.dir = dir, .group = "up", .limit_spec = "1G"};
	return vr_join(&o, m, NULL, err, errlen);
}

/* Leaves the group's door behind as another version's. */
static void stale_door(void)
{
	vr_member *m = NULL;
	char err[256];
	ASSERT_EQ(join_group(&m, err, sizeof(err)), 0);
	vr_leave(m);
	char path[4200];
	snprintf(path, sizeof(path), "%s/up.vrg", dir);
	int fd = open(path, O_WRONLY);
	ASSERT(fd >= 0);
	uint32_t older = VR_REGION_VERSION - 1;
	ASSERT_EQ(pwrite(fd, &older, sizeof(older), 8), (ssize_t)sizeof(older));
	close(fd);
}

/* N joiners released at once on a stale door. */
static void round_once(void)
{
	stale_door();
	int go[2], up[2], hold[2];
	ASSERT_EQ(pipe(go), 0);
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(hold), 0);
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			close(go[1]);
			close(up[0]);
			close(hold[1]);
			char c, err[256] = "";
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			vr_member *m = NULL;
			int rc = join_group(&m, err, sizeof(err));
			int ok = rc == 0 && vr_device(m, uuid0, 1u << 30, NULL) == 0 &&
			         vr_reserve(m, 0, 1000, NULL) == 0;
			if (!ok)
				fprintf(stderr, "joiner %d: %d %s\n", i, rc, err);
			c = ok ? 'y' : 'n';
			if (write(up[1], &c, 1) != 1)
				_exit(3);
			while (read(hold[0], &c, 1) > 0) /* until the parent lets go */
				;
			vr_leave(m);
			_exit(ok ? 0 : 2);
		}
	}
	close(go[0]);
	close(up[1]);
	close(hold[0]);
	close(go[1]); /* all at once */
	for (int i = 0; i < N; i++) {
		char c;
		ASSERT_EQ(read(up[0], &c, 1), 1);
		ASSERT_EQ(c, 'y');
	}
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	ASSERT_EQ(s->ngroups, 1);
	ASSERT_EQ(s->groups[0].nmembers, N);
	ASSERT_UEQ(s->groups[0].dev[0].in_use, (uint64_t)N * 1000);
	vramctl_snapshot_free(s);
	close(hold[1]);
	close(up[0]);
	for (int i = 0; i < N; i++) {
		int st;
		ASSERT_EQ(waitpid(pids[i], &st, 0), pids[i]);
		ASSERT(WIFEXITED(st));
		ASSERT_EQ(WEXITSTATUS(st), 0);
	}
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
