/*
 * test_hami - a container set up by HAMi's device plugin, with vramctl's
 * library in place of HAMi-core's libvgpu.so, is capped by vramctl: exactly
 * the environment Allocate() writes (CUDA_DEVICE_MEMORY_LIMIT_0="<MiB>m",
 * CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_MEMORY_SHARED_CACHE in a 0777 directory
 * of its own) and no VRAMCTL_* variable. The books go to
 * "<cache dir>/vramctl", group "hami-<cache name>". Also: every HAMi size
 * form; both contracts set (VRAMCTL_LIMIT wins, said once); a malformed
 * HAMi cap fails closed; CUDA_DISABLE_CONTROL=true leaves the program
 * uncapped; LIBCUDA_LOG_LEVEL=0 keeps warnings (the denial line) quiet.
 * Sizes are relative to the device's total, so it runs on a real driver.
 */
#include <sys/stat.h>

#include "hooktest.h"

/* Total == T_CAP on every query path (NVML's: T_NVML_TOTAL when set), a
 * denial past it, room after a free. */
static int child_capped(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	uint64_t nvml_total = getenv("T_NVML_TOTAL") ? ht_env_u64("T_NVML_TOTAL") : cap;
	CUdevice dev = ht_ctx();
	size_t f = 0, t = 0, tot = 0;
	ASSERT_CU(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
	ASSERT_CU(cuDeviceTotalMem_v2(&tot, dev), CUDA_SUCCESS);
	ASSERT_UEQ(t, cap);
	ASSERT_UEQ(tot, cap);
	nvmlMemory_t m;
	ASSERT_CU(nvmlDeviceGetMemoryInfo(ht_nvml_dev(dev), &m), NVML_SUCCESS);
	ASSERT_UEQ(m.total, nvml_total);
	CUdeviceptr a = 0, b = 0;
	ASSERT_CU(cuMemAlloc_v2(&a, cap / 10 * 6), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&b, cap / 10 * 6), CUDA_ERROR_OUT_OF_MEMORY);
	/* The books are where the shared-cache path says, while a member lives. */
	const char *books = getenv("T_BOOKS");
	if (books) {
		struct stat st;
		ASSERT_EQ(stat(books, &st), 0);
	}
	ASSERT_CU(cuMemFree_v2(a), CUDA_SUCCESS);
	ASSERT_CU(cuMemAlloc_v2(&b, cap / 10 * 6), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(b), CUDA_SUCCESS);
	return 0;
}

static int child_closed(void)
{
	ht_ctx();
	CUdeviceptr a;
	ASSERT_CU(cuMemAlloc_v2(&a, MiB), CUDA_ERROR_OUT_OF_MEMORY);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "capped"))
			return child_capped();
		if (!strcmp(argv[1], "closed"))
			return child_closed();
		return 2;
	}
	uint64_t total = ht_total();
	uint64_t cap_mib = total / 4 / MiB;
	if (cap_mib > 1024)
		cap_mib = 1024;
	uint64_t cap = cap_mib * MiB;

	/* HAMi's per-container directory: 0777, as Allocate() makes it. */
	char vgpu[1024], cache[1200], books[1300];
	snprintf(vgpu, sizeof vgpu, "%s/vgpu", ht_tmp());
	ASSERT_EQ(mkdir(vgpu, 0777), 0);
	ASSERT_EQ(chmod(vgpu, 0777), 0);
	const char *uuid = "7b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d";
	snprintf(cache, sizeof cache, "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/%s.cache", vgpu, uuid);
	snprintf(books, sizeof books, "T_BOOKS=%s/vramctl/hami-%s.vrg", vgpu, uuid);
	char lim0[96];
	snprintf(lim0, sizeof lim0, "CUDA_DEVICE_MEMORY_LIMIT_0=%llum",
	         (unsigned long long)cap_mib);
	const char *plugin[] = {lim0,
	                        "CUDA_DEVICE_SM_LIMIT=0",
	                        cache,
	                        "VRAMCTL_REGISTRY_DIR",
	                        "VRAMCTL_LIMIT",
	                        "VRAMCTL_GROUP",
	                        ht_kv("T_CAP", cap),
	                        books,
	                        NULL};
	ASSERT_EQ(ht_run("capped", plugin), 0);
	ASSERT_EQ(ht_err_count("capped", "vramctl: denied "), 1);

	/* Every size form HAMi documents, for every device. */
	char forms[4][96];
	snprintf(forms[0], sizeof forms[0], "CUDA_DEVICE_MEMORY_LIMIT=%llu",
	         (unsigned long long)cap);
	snprintf(forms[1], sizeof forms[1], "CUDA_DEVICE_MEMORY_LIMIT=%lluk",
	         (unsigned long long)cap_mib * 1024);
	snprintf(forms[2], sizeof forms[2], "CUDA_DEVICE_MEMORY_LIMIT=%lluM",
	         (unsigned long long)cap_mib);
	int nforms = 3;
	if (cap_mib % 1024 == 0)
		snprintf(forms[nforms++], sizeof forms[0], "CUDA_DEVICE_MEMORY_LIMIT=%llug",
		         (unsigned long long)cap_mib / 1024);
	for (int i = 0; i < nforms; i++) {
		const char *env[] = {forms[i], ht_kv("T_CAP", cap), NULL};
		ASSERT_EQ(ht_run("capped", env), 0);
	}

	/* Both contracts: VRAMCTL_LIMIT wins, and says so once. */
	char vlim[64], half[96];
	snprintf(vlim, sizeof vlim, "VRAMCTL_LIMIT=%llu", (unsigned long long)cap);
	snprintf(half, sizeof half, "CUDA_DEVICE_MEMORY_LIMIT_0=%llum",
	         (unsigned long long)cap_mib / 2);
	const char *both[] = {vlim, half, ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("capped", both), 0);
	ASSERT_EQ(ht_err_count("capped", "VRAMCTL_LIMIT applies"), 1);

	/* A malformed HAMi cap fails closed, naming the variable. */
	const char *bad[] = {"CUDA_DEVICE_MEMORY_LIMIT_0=3000MB", NULL};
	ASSERT_EQ(ht_run("closed", bad), 0);
	ASSERT_EQ(ht_err_count("closed", "CUDA_DEVICE_MEMORY_LIMIT_0: '3000MB'"), 1);
	ASSERT_EQ(ht_err_count("closed", "fail closed"), 1);

	/* CUDA_DISABLE_CONTROL=true: HAMi's contract is off; the program sees
	 * the whole device, each interface its own total. */
	const char *off[] = {lim0, "CUDA_DISABLE_CONTROL=true", ht_kv("T_CAP", total),
	                     ht_kv("T_NVML_TOTAL", ht_nvml_total()), NULL};
	ASSERT_EQ(ht_run("capped", off), 0);

	/* LIBCUDA_LOG_LEVEL=0 (errors only): the denial line is a warning. */
	const char *quiet[] = {lim0, "LIBCUDA_LOG_LEVEL=0", ht_kv("T_CAP", cap), NULL};
	ASSERT_EQ(ht_run("capped", quiet), 0);
	ASSERT_EQ(ht_err_count("capped", "vramctl: denied "), 0);
	/* ... unless VRAMCTL_LOG says otherwise. */
	const char *loud[] = {lim0, "LIBCUDA_LOG_LEVEL=0", "VRAMCTL_LOG=warn", ht_kv("T_CAP", cap),
	                      NULL};
	ASSERT_EQ(ht_run("capped", loud), 0);
	ASSERT_EQ(ht_err_count("capped", "vramctl: denied "), 1);
	return 0;
}
