/*
 * test_fork - children started with fork+exec inherit the cap: the parent
 * holds 60 % of the group's cap, its child's 60 % is refused and its 30 %
 * fits; when the child exits, its memory returns to the group. Also a child
 * forked without exec keeps running under the library (it forgets the
 * parent's books and joins anew; it makes no driver calls, as CUDA requires).
 */
#include "hooktest.h"

static int run_self(const char *mode)
{
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "hooktest-child", mode, (char *)NULL);
		_exit(127);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int parent(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	ht_ctx();
	CUdeviceptr a;
	ASSERT_CU(cuMemAlloc_v2(&a, ht_tenths(cap, 6)), CUDA_SUCCESS);
	ASSERT_EQ(run_self("child"), 0);
	/* The child ended holding 30 %: the group reclaims a dead member's
	 * memory before it refuses anyone, so 40 % fits again. */
	CUdeviceptr c;
	ASSERT_CU(cuMemAlloc_v2(&c, ht_tenths(cap, 4)), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(c), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap - ht_tenths(cap, 6));

	/* fork without exec: the child only exits; the parent is unharmed. */
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0)
		_exit(0);
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_UEQ(ht_free(), cap - ht_tenths(cap, 6));
	ASSERT_CU(cuMemFree_v2(a), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap);
	return 0;
}

static int child(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	ht_ctx();
	ASSERT_UEQ(ht_free(), cap - ht_tenths(cap, 6)); /* the parent's share shows */
	CUdeviceptr b;
	ASSERT_CU(cuMemAlloc_v2(&b, ht_tenths(cap, 6)), CUDA_ERROR_OUT_OF_MEMORY);
	ASSERT_CU(cuMemAlloc_v2(&b, ht_tenths(cap, 3)), CUDA_SUCCESS);
	return 0; /* exits holding it: the group reclaims it */
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "parent"))
			return parent();
		if (!strcmp(argv[1], "child"))
			return child();
		return 2;
	}
	uint64_t cap = ht_total() / 4;
	char group[64];
	snprintf(group, sizeof group, "VRAMCTL_GROUP=forktest-%d", (int)getpid());
	const char *env[] = {ht_kv("VRAMCTL_LIMIT", cap), group, ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("parent", env), 0);
	ASSERT_EQ(ht_err_count("parent", "vramctl: denied"), 1);
	return 0;
}
