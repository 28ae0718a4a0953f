/*
 * test_twice - the library loaded twice acts once: LD_PRELOAD naming it
 * twice, and a second copy at another path (the first in the search order
 * acts, the other passes through). An allocation is counted once, a denial
 * reported once.
 */
#include "hooktest.h"

static int child(void)
{
	uint64_t cap = ht_env_u64("T_CAP");
	ht_ctx();
	uint64_t part = ht_tenths(cap, 6);
	CUdeviceptr a, b;
	ASSERT_UEQ(ht_free(), cap);
	ASSERT_CU(cuMemAlloc_v2(&a, part), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap - part); /* counted once, not twice */
	ASSERT_CU(cuMemAlloc_v2(&b, part), CUDA_ERROR_OUT_OF_MEMORY);
	/* Through dlsym and cuGetProcAddress: still counted once. */
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	ASSERT(h);
	vr_pfn_cuMemAlloc_v2 al = (vr_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
	vr_pfn_cuMemFree_v2 fr = (vr_pfn_cuMemFree_v2)dlsym(h, "cuMemFree_v2");
	ASSERT_CU(al(&b, ht_tenths(cap, 1)), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap - part - ht_tenths(cap, 1));
	ASSERT_CU(fr(b), CUDA_SUCCESS);
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, &st), CUDA_SUCCESS);
	ASSERT_CU(((vr_pfn_cuMemAlloc_v2)p)(&b, ht_tenths(cap, 1)), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap - part - ht_tenths(cap, 1));
	ASSERT_CU(cuMemFree_v2(b), CUDA_SUCCESS);
	ASSERT_CU(cuMemFree_v2(a), CUDA_SUCCESS);
	ASSERT_UEQ(ht_free(), cap);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "child") == 0 ? child() : 2;
	uint64_t cap = ht_total() / 4;

	/* A copy of the library at another path. */
	char copy[1024], cmd[3000];
	snprintf(copy, sizeof copy, "%s/copy/libvramctl.so", ht_tmp());
	snprintf(cmd, sizeof cmd, "mkdir -p %s/copy && cp %s %s", ht_tmp(), ht_lib(), copy);
	ASSERT_EQ(system(cmd), 0);

	char same[3000], two[3000], rev[3000];
	snprintf(same, sizeof same, "LD_PRELOAD=%s %s", ht_lib(), ht_lib());
	snprintf(two, sizeof two, "LD_PRELOAD=%s:%s", ht_lib(), copy);
	snprintf(rev, sizeof rev, "LD_PRELOAD=%s:%s", copy, ht_lib());
	const char *pre[] = {same, two, rev};
	for (int i = 0; i < 3; i++) {
		const char *env[] = {ht_kv("VRAMCTL_LIMIT", cap), ht_kv("T_CAP", cap), pre[i],
		                     NULL};
		ASSERT_EQ(ht_run("child", env), 0);
		ASSERT_EQ(ht_err_count("child", "vramctl: denied"), 1);
	}
	return 0;
}
