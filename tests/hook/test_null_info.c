/*
 * test_null_info - a memory query with a NULL pointer (issue #37: OptiX and
 * Isaac Sim call cuMemGetInfo_v2 with free = NULL; a peer's hook
 * dereferenced it and crashed, HAMi-core #333). Under a cap the library
 * answers as the driver does without it, never crashing:
 *   codes: each query with one or both pointers NULL (cuMemGetInfo[_v2],
 *          cuDeviceTotalMem_v2, nvmlDeviceGetMemoryInfo[_v2]) returns the
 *          driver's own code, and writes an output exactly when the driver
 *          does (the simulator, as cuda.h documents, refuses a NULL pointer
 *          with CUDA_ERROR_INVALID_VALUE; a real driver's answer is
 *          bench/gpu/driver_facts' "null" line);
 *   shim:  a driver that fills the pointer it was given (nullinfo.c as
 *          VRAMCTL_DRIVER): that one is clamped to the cap too, never the
 *          whole device's.
 */
#include "hooktest.h"

#define UNSET 0x5a5a5a5a5a5a5a5aull

/* One query: its code, and whether it wrote the output it was given. */
static void one(const char *what, CUresult rc, int wrote)
{
	fprintf(stderr, "query %s: %d%s\n", what, (int)rc, wrote ? " wrote" : "");
}

static int child_codes(void)
{
	CUdevice dev = ht_ctx();
	nvmlDevice_t n = ht_nvml_dev(dev);
	size_t f = UNSET, t = UNSET;
	unsigned int f32 = 0x5a5a5a5a, t32 = 0x5a5a5a5a;
	one("v2 free=NULL", cuMemGetInfo_v2(NULL, &t), t != UNSET);
	one("v2 total=NULL", cuMemGetInfo_v2(&f, NULL), f != UNSET);
	one("v2 both NULL", cuMemGetInfo_v2(NULL, NULL), 0);
	one("32 free=NULL", cuMemGetInfo(NULL, &t32), t32 != 0x5a5a5a5a);
	one("32 total=NULL", cuMemGetInfo(&f32, NULL), f32 != 0x5a5a5a5a);
	one("cuDeviceTotalMem_v2 NULL", cuDeviceTotalMem_v2(NULL, dev), 0);
	one("nvml v1 NULL", (CUresult)nvmlDeviceGetMemoryInfo(n, NULL), 0);
	one("nvml v2 NULL", (CUresult)nvmlDeviceGetMemoryInfo_v2(n, NULL), 0);
	/* And the library still answers a query with both. */
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	return 0;
}

static int child_shim(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	ht_ctx();
	size_t f = 0, t = 0;
	unsigned int t32 = 0;
	ASSERT_CU(cuMemGetInfo_v2(NULL, &t), CUDA_SUCCESS);
	ASSERT_UEQ(t, cap);
	ASSERT_CU(cuMemGetInfo_v2(&f, NULL), CUDA_SUCCESS);
	ASSERT_ULE(f, cap);
	ASSERT_CU(cuMemGetInfo(NULL, &t32), CUDA_SUCCESS);
	ASSERT_UEQ(t32, cap < 0xffffffffu ? cap : 0xffffffffu);
	return 0;
}

/* The lines "query ..." of mode's stderr, into buf. */
static void queries(const char *mode, char *buf, size_t len)
{
	char path[1024], line[256];
	snprintf(path, sizeof path, "%s/%s.err", ht_tmp(), mode);
	FILE *f = fopen(path, "r");
	ASSERT(f != NULL);
	buf[0] = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "query ", 6))
			strncat(buf, line, len - strlen(buf) - 1);
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "codes"))
			return child_codes();
		if (!strcmp(argv[1], "shim"))
			return child_shim();
		return 2;
	}
	uint64_t cap = ht_total() / 4 / (2 * MiB) * (2 * MiB);
	char limit[64], drv[1100], own[4096], capped[4096];
	snprintf(limit, sizeof limit, "VRAMCTL_LIMIT=%llu", (unsigned long long)cap);

	/* The driver's own answers (no library), then under a cap, both ways
	 * of counting. */
	const char *none[] = {"LD_PRELOAD", NULL};
	ASSERT_EQ(ht_run("codes", none), 0);
	queries("codes", own, sizeof own);
	ASSERT(strstr(own, "query v2 free=NULL") != NULL);
	const char *cap_env[] = {limit, NULL};
	ASSERT_EQ(ht_run("codes", cap_env), 0);
	queries("codes", capped, sizeof capped);
	ASSERT_STR_EQ(capped, own);
	const char *card_env[] = {limit, "VRAMCTL_COUNT", NULL};
	ASSERT_EQ(ht_run("codes", card_env), 0);
	queries("codes", capped, sizeof capped);
	ASSERT_STR_EQ(capped, own);

	if (!getenv("VR_TEST_DRIVER") || strcmp(getenv("VR_TEST_DRIVER"), "sim") != 0) {
		printf("ok (shim: needs the simulator)\n");
		return 0;
	}
	snprintf(drv, sizeof drv, "VRAMCTL_DRIVER=%s/tests/hook/libnullinfo.so", ht_build());
	const char *shim[] = {limit, drv, ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("shim", shim), 0);
	ASSERT_EQ(ht_err_size("shim"), 0);
	printf("ok\n");
	return 0;
}
