/*
 * test_procaddr - cuGetProcAddress_v2 and the 11.3 four-argument form follow the
 * driver's rules: newest variant at or before cudaVersion, per-thread
 * variants under the per-thread flag only, status for unknown and too-new
 * symbols, CUDA_ERROR_INVALID_VALUE above the driver's version.
 */
#include "simtest.h"
#include "sim/cuda_extra.h"

#include "common/compiler.h"

#include <dlfcn.h>
#include <string.h>

static void *lookup(const char *sym, int ver, cuuint64_t flags, CUdriverProcAddressQueryResult *st)
{
	void *p = (void *)0x1;
	*st = (CUdriverProcAddressQueryResult)-1;
	ASSERT_CU(cuGetProcAddress_v2(sym, &p, ver, flags, st), CUDA_SUCCESS);
	return p;
}

/* The exported symbol of that name, as dlsym sees it. */
static void *exported(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	ASSERT(h != NULL);
	void *p = dlsym(h, name);
	dlclose(h);
	ASSERT(p != NULL);
	return p;
}

static void expect(const char *sym, int ver, cuuint64_t flags, const char *want)
{
	CUdriverProcAddressQueryResult st;
	void *p = lookup(sym, ver, flags, &st);
	if (p != exported(want))
		TEST_FAILF("cuGetProcAddress_v2(%s, %d, %llu) did not return %s", sym, ver,
		           (unsigned long long)flags, want);
	ASSERT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
}

/* Success with *pfn NULL, told apart by the status: unknown or too new. */
static void expect_none(const char *sym, int ver, CUdriverProcAddressQueryResult want)
{
	CUdriverProcAddressQueryResult st;
	void *p = lookup(sym, ver, 0, &st);
	if (p != NULL || st != want)
		TEST_FAILF(
		    "cuGetProcAddress_v2(%s, %d): expected NULL and status %d, got %p and %d", sym,
		    ver, (int)want, p, (int)st);
}

static void check_reachable(const char *name, const int *versions, size_t n)
{
	char base[128];
	size_t len;
	snprintf(base, sizeof(base), "%s", name);
	len = strlen(base);
	if (len > 5 &&
	    (strcmp(base + len - 5, "_ptsz") == 0 || strcmp(base + len - 5, "_ptds") == 0))
		base[len -= 5] = '\0';
	char *v = strrchr(base, '_');
	if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9')
		*v = '\0';
	void *want = exported(name);
	for (size_t i = 0; i < n; i++)
		for (cuuint64_t flags = 0; flags <= 2; flags += 2) {
			CUdriverProcAddressQueryResult st;
			void *p = NULL;
			ASSERT_CU(cuGetProcAddress_v2(base, &p, versions[i], flags, &st),
			          CUDA_SUCCESS);
			if (p == want)
				return;
		}
	TEST_FAILF("%s is not reachable through cuGetProcAddress(\"%s\")", name, base);
}

int main(void)
{
	CUdriverProcAddressQueryResult st;
	void *p;
	int drv;

	REQUIRE_SIM();
	/* Works before cuInit, as cudart calls it first. */
	expect("cuInit", 12000, 0, "cuInit");
	ASSERT_CU(cuInit(0), CUDA_SUCCESS);
	ASSERT_CU(cuDriverGetVersion(&drv), CUDA_SUCCESS);
	ASSERT_EQ(drv, 13000);

	/* Versioned variants. */
	expect("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
	expect("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
	expect("cuMemAlloc", 3010, 0, "cuMemAlloc");
	expect("cuMemAlloc", 2000, 0, "cuMemAlloc");
	expect("cuMemFree", 12000, 0, "cuMemFree_v2");
	expect("cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2");
	expect("cuMemGetInfo", 3000, 0, "cuMemGetInfo");
	expect("cuDeviceTotalMem", 11000, 0, "cuDeviceTotalMem_v2");
	expect("cuMemAllocPitch", 12000, 0, "cuMemAllocPitch_v2");
	expect("cuCtxCreate", 3020, 0, "cuCtxCreate_v2");
	expect("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
	expect("cuCtxCreate", 12040, 0, "cuCtxCreate_v3");
	expect("cuCtxCreate", 12050, 0, "cuCtxCreate_v4");
	expect("cuCtxCreate", 2000, 0, "cuCtxCreate");
	expect("cuDeviceGetUuid", 11030, 0, "cuDeviceGetUuid");
	expect("cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2");
	expect("cuIpcOpenMemHandle", 10020, 0, "cuIpcOpenMemHandle");
	expect("cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2");
	expect("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2");
	expect("cuMemHostRegister", 6000, 0, "cuMemHostRegister");
	expect("cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2");
	expect("cuCtxDestroy", 3020, 0, "cuCtxDestroy");
	expect("cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2");
	expect("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2");
	expect("cuDevicePrimaryCtxRelease", 10020, 0, "cuDevicePrimaryCtxRelease");
	expect("cuDevicePrimaryCtxReset", 12000, 0, "cuDevicePrimaryCtxReset_v2");
	expect("cuDevicePrimaryCtxSetFlags", 12000, 0, "cuDevicePrimaryCtxSetFlags_v2");
	expect("cuCtxSynchronize", 12080, 0, "cuCtxSynchronize");
	expect("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
	expect("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
	expect("cuGetProcAddress", 11080, 0, "cuGetProcAddress");
	expect("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
	expect("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
	expect("cuGraphInstantiate", 13000, 0, "cuGraphInstantiate_v2");
	expect("cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags");
	expect("cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams");
	expect("cuGraphInstantiateWithParams", 13000, 1, "cuGraphInstantiateWithParams");

	/* Per-thread default stream variants: flag 2 only; flag 0 and 1 legacy. */
	expect("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	       "cuMemAllocAsync_ptsz");
	expect("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemAllocAsync");
	expect("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAllocAsync");
	expect("cuMemFreeAsync", 11020, 2, "cuMemFreeAsync_ptsz");
	expect("cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz");
	expect("cuLaunchKernel", 12000, 2, "cuLaunchKernel_ptsz");
	expect("cuGraphLaunch", 12000, 2, "cuGraphLaunch_ptsz");
	expect("cuStreamSynchronize", 12000, 2, "cuStreamSynchronize_ptsz");
	expect("cuGraphInstantiateWithParams", 12000, 2, "cuGraphInstantiateWithParams_ptsz");
	/* No per-thread variant: the legacy one. */
	expect("cuMemAlloc", 12000, 2, "cuMemAlloc_v2");

	/* Unknown symbols: success, NULL, SYMBOL_NOT_FOUND. */
	expect_none("cuNoSuchFunction", 12000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	/* Exported names are not base names. */
	expect_none("cuMemAlloc_v2", 12000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	/* Known but newer than cudaVersion. */
	expect_none("cuMemAllocAsync", 11000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	expect_none("cuGetProcAddress", 11020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	expect_none("cuGraphInstantiateWithParams", 11080,
	            CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	/* NULL status is allowed. */
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, NULL), CUDA_SUCCESS);
	ASSERT(p == exported("cuMemAlloc_v2"));

	/* Above the driver's version, bad arguments. */
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 99999, 0, &st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGetProcAddress_v2(NULL, &p, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 8, &st), CUDA_ERROR_INVALID_VALUE);

	/* The four-argument form: same rules, no status. */
	p = NULL;
	ASSERT_CU(cuGetProcAddress("cuMemAlloc", &p, 12000, 0), CUDA_SUCCESS);
	ASSERT(p == exported("cuMemAlloc_v2"));
	ASSERT_CU(cuGetProcAddress("cuMemAllocAsync", &p, 11020, 2), CUDA_SUCCESS);
	ASSERT(p == exported("cuMemAllocAsync_ptsz"));
	ASSERT_CU(cuGetProcAddress("cuGetProcAddress", &p, 12000, 0), CUDA_SUCCESS);
	ASSERT(p == exported("cuGetProcAddress_v2"));
	p = (void *)0x1;
	ASSERT_CU(cuGetProcAddress("cuNoSuchFunction", &p, 12000, 0), CUDA_SUCCESS);
	ASSERT(p == NULL);
	ASSERT_CU(cuGetProcAddress("cuMemAlloc", &p, 20000, 0), CUDA_ERROR_INVALID_VALUE);

	/* Every entry point of cuda_api.h is exported under its own name. */
#define CHECK_EXPORTED(name, params, args) ASSERT(exported(#name) == (void *)name);
	VR_CUDA_FUNCS(CHECK_EXPORTED)
	VRAMSIM_CUDA_EXTRA_FUNCS(CHECK_EXPORTED) /* and the simulator's own additions */
#undef CHECK_EXPORTED

	/* ... and cuGetProcAddress hands each one out for some version and flag
	 * (its base name is the name less _vN, _ptsz and _ptds). */
	static const int versions[] = {2000,  2020,  3010,  3020,  4000,  4010,  5000,  6000,
	                               6050,  7000,  9020,  10000, 10020, 11000, 11010, 11020,
	                               11030, 11040, 11060, 11070, 12000, 12050, 12080, 13000};
#define CHECK_REACHABLE(name, params, args)                                                        \
	check_reachable(#name, versions, VR_ARRAY_LEN(versions));
	VR_CUDA_FUNCS(CHECK_REACHABLE)
	VRAMSIM_CUDA_EXTRA_FUNCS(CHECK_REACHABLE)
#undef CHECK_REACHABLE

	/* A returned pointer works. */
	vr_pfn_cuDriverGetVersion getver = NULL;
	ASSERT_CU(cuGetProcAddress_v2("cuDriverGetVersion", (void **)&getver, 12000, 0, &st),
	          CUDA_SUCCESS);
	ASSERT(getver != NULL);
	drv = 0;
	ASSERT_CU(getver(&drv), CUDA_SUCCESS);
	ASSERT_EQ(drv, 13000);
	return 0;
}
