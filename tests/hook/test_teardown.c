/*
 * test_teardown - a killed member's share of the group stays held while the
 * driver still has its memory (docs/fail-closed.md, "Dead members").
 *
 * The simulator keeps a dead process's memory on the card, and NVML lists
 * its PID, for VRAMSIM_TEARDOWN_MS after its death, as a real driver does
 * while it tears a large context down. A survivor holds a little, starts a
 * victim that takes 60 % of the group's cap, kills it (SIGKILL) and reaps
 * it; then:
 *   held:   60 % more is refused while NVML lists the victim, and granted
 *           once it no longer does;
 *   bound:  NVML lists it for an hour: granted after the bound
 *           (VRAMCTL_TEST_TEARDOWN_BOUND_MS), with one line;
 *   nonvml: the library cannot load NVML: granted at once (reaped = gone).
 * No assertion depends on timing: a refusal counts only when NVML listed
 * the victim both before and after it (listing ends once and for good), and
 * the waits for NVML and the grant have generous limits.
 */
#include <signal.h>
#include <time.h>

#include "hooktest.h"

#define T_INCONCLUSIVE 3

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* 1 if NVML lists pid on the card (the test's own NVML, not the library's). */
static int nvml_lists(nvmlDevice_t n, pid_t pid)
{
	nvmlProcessInfo_t info[64];
	unsigned count = 64;
	ASSERT_CU(nvmlDeviceGetComputeRunningProcesses_v3(n, &count, info), NVML_SUCCESS);
	for (unsigned i = 0; i < count; i++)
		if (info[i].pid == (unsigned)pid)
			return 1;
	return 0;
}

/* Starts `self victim` (the library and the environment are inherited) and
 * waits until it holds its share. */
static pid_t start_victim(void)
{
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 3);
		execl("/proc/self/exe", "hooktest-child", "victim", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char c = 0;
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, 'r');
	close(p[0]);
	return pid;
}

static int victim(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	ht_ctx();
	CUdeviceptr a;
	ASSERT_CU(cuMemAlloc_v2(&a, cap / 10 * 6), CUDA_SUCCESS);
	ASSERT_EQ(write(3, "r", 1), 1);
	for (;;)
		pause();
}

/* Allocates bytes until it is granted, for up to limit_ms. */
static int alloc_until_granted(uint64_t bytes, unsigned limit_ms)
{
	CUdeviceptr b;
	for (unsigned waited = 0;; waited += 50) {
		int rc = cuMemAlloc_v2(&b, bytes);
		if (rc == CUDA_SUCCESS)
			return 1;
		ASSERT_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);
		if (waited >= limit_ms)
			return 0;
		sleep_ms(50);
	}
}

static int survivor(const char *mode)
{
	uint64_t cap = ht_env_u64("T_CAP");
	CUdevice dev = ht_ctx();
	nvmlDevice_t n = ht_nvml_dev(dev);
	CUdeviceptr a, b;
	ASSERT_CU(cuMemAlloc_v2(&a, 1 * MiB), CUDA_SUCCESS); /* a member now */
	pid_t v = start_victim();
	ASSERT_EQ(kill(v, SIGKILL), 0);
	ASSERT_EQ(waitpid(v, NULL, 0), v); /* reaped */
	ASSERT(nvml_lists(n, v));          /* the driver still tears it down */

	if (!strcmp(mode, "nonvml")) {
		ASSERT_CU(cuMemAlloc_v2(&b, cap / 10 * 6), CUDA_SUCCESS);
		ASSERT(nvml_lists(n, v));
		return 0;
	}
	int rc = cuMemAlloc_v2(&b, cap / 10 * 6);
	if (!nvml_lists(n, v))
		return T_INCONCLUSIVE; /* the teardown ended meanwhile: longer, again */
	ASSERT_CU(rc, CUDA_ERROR_OUT_OF_MEMORY);

	if (!strcmp(mode, "held")) {
		for (unsigned waited = 0; nvml_lists(n, v); waited += 50) {
			ASSERT(waited < 300000);
			sleep_ms(50);
		}
	}
	ASSERT(alloc_until_granted(cap / 10 * 6, 120000));
	if (!strcmp(mode, "bound"))
		ASSERT(nvml_lists(n, v)); /* given back while still listed */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "victim"))
			return victim();
		return survivor(argv[1]);
	}
	REQUIRE_SIM();
	uint64_t cap = ht_total() / 4;
	char group[64];
	const char *env[8];
	int k = 0;

	/* held: the teardown lasts T ms; T doubles when a run was too slow to
	 * see the refusal inside it. */
	int rc = T_INCONCLUSIVE;
	for (unsigned t = 2000; rc == T_INCONCLUSIVE && t <= 64000; t *= 4) {
		snprintf(group, sizeof group, "VRAMCTL_GROUP=held-%d-%u", (int)getpid(), t);
		const char *e[] = {ht_kv("VRAMCTL_LIMIT", cap), group, ht_kv("T_CAP", cap),
		                   ht_kv("VRAMSIM_TEARDOWN_MS", t), NULL};
		rc = ht_run("held", e);
	}
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(ht_err_count("held", "still listed by NVML"), 0);

	snprintf(group, sizeof group, "VRAMCTL_GROUP=bound-%d", (int)getpid());
	env[k++] = ht_kv("VRAMCTL_LIMIT", cap);
	env[k++] = group;
	env[k++] = ht_kv("T_CAP", cap);
	env[k++] = "VRAMSIM_TEARDOWN_MS=3600000";
	env[k++] = "VRAMCTL_TEST_TEARDOWN_BOUND_MS=1500";
	env[k] = NULL;
	ASSERT_EQ(ht_run("bound", env), 0);
	ASSERT_EQ(ht_err_count("bound", "still listed by NVML"), 1);

	snprintf(group, sizeof group, "VRAMCTL_GROUP=nonvml-%d", (int)getpid());
	env[4] = "VRAMCTL_NVML=/nonexistent/libnvidia-ml.so.1";
	ASSERT_EQ(ht_run("nonvml", env), 0);
	ASSERT_EQ(ht_err_count("nonvml", "still listed by NVML"), 0);
	return 0;
}
