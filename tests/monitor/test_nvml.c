/*
 * test_nvml - the monitor's NVML reader against two fake NVML libraries
 * whose _v3 process call writes 32-byte (R535) and 24-byte entries: the
 * stride is found, every PID and usage read right, ULLONG_MAX kept as
 * unknown, and the memory read with nvmlDeviceGetMemoryInfo when _v2 is
 * absent. Also: a missing library is a clear error, not a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "monitor/nvml.h"

static void check(const char *lib)
{
	char err[256] = "";
	struct mon_nvml *nv = NULL;
	int rc = mon_nvml_open(lib, &nv, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("mon_nvml_open(%s) = %d: %s", lib, rc, err);
	struct mon_model m = {0};
	ASSERT_EQ(mon_nvml_read(nv, &m), 0);
	ASSERT_EQ(m.ndevs, 1);
	ASSERT(m.devs[0].valid & MON_DEV_MEMORY);
	ASSERT_UEQ(m.devs[0].total, 8ULL << 30);
	ASSERT_STR_EQ(m.devs[0].proc_api, "v3");
	ASSERT_STR_EQ(m.devs[0].name, "Fake R535");
	ASSERT_EQ(m.nprocs, 3);
	ASSERT_EQ(m.procs[0].host_pid, 1111);
	ASSERT(m.procs[0].valid & MON_P_NVML_USED);
	ASSERT_UEQ(m.procs[0].nvml_used, 100ULL << 20);
	ASSERT_EQ(m.procs[1].host_pid, 2222);
	ASSERT(!(m.procs[1].valid & MON_P_NVML_USED)); /* ULLONG_MAX: unknown */
	ASSERT(m.procs[1].valid & MON_P_NVML);
	ASSERT_EQ(m.procs[2].host_pid, 3333);
	ASSERT_UEQ(m.procs[2].nvml_used, 300ULL << 20);
	mon_model_clear(&m);
	mon_nvml_close(nv);
}

int main(void)
{
	const char *b = getenv("VR_BUILD");
	char p[1024];
	snprintf(p, sizeof(p), "%s/tests/monitor/fake-nvml-32/libnvidia-ml.so.1", b ? b : ".");
	check(p);
	snprintf(p, sizeof(p), "%s/tests/monitor/fake-nvml-24/libnvidia-ml.so.1", b ? b : ".");
	check(p);

	char err[256] = "";
	struct mon_nvml *nv = NULL;
	ASSERT_EQ(mon_nvml_open("/nonexistent/libnvidia-ml.so.1", &nv, err, sizeof(err)), -ENOENT);
	ASSERT(strstr(err, "NVML not found") != NULL);
	ASSERT(nv == NULL);
	printf("nvml reader checks passed\n");
	return 0;
}
