/*
 * test_array.c - arrays and mipmapped arrays: size from format bytes x
 * channels x dimensions (each level for mipmaps), rounded up to 64 KiB;
 * cu*GetMemoryRequirements report it; destroy gives it back.
 */
#include "simtest.h"

int main(void)
{
	CUarray a, b;
	CUmipmappedArray mm;
	CUDA_ARRAY_MEMORY_REQUIREMENTS req;

	REQUIRE_SIM();
	CUDA_ARRAY_DESCRIPTOR d = {1000, 1000, CU_AD_FORMAT_FLOAT, 4};
	ASSERT_CU(cuArrayCreate_v2(&a, &d), CUDA_ERROR_NOT_INITIALIZED);
	sim_setup();
	unsigned long long base = sim_used();

	/* 1000 x 1000 x 4 channels x 4 bytes = 16,000,000, rounded to 64 KiB. */
	ASSERT_CU(cuArrayCreate_v2(&a, &d), CUDA_SUCCESS);
	unsigned long long sz = (16000000ull + 65535) / 65536 * 65536;
	ASSERT_UEQ(sim_used(), base + sz);
	ASSERT_CU(cuArrayGetMemoryRequirements(&req, a, 0), CUDA_SUCCESS);
	ASSERT_UEQ(req.size, sz);
	ASSERT_UEQ(req.alignment, 65536);

	/* 3D: 64 x 64 x 64, one 2-byte channel = 512 KiB. */
	CUDA_ARRAY3D_DESCRIPTOR d3 = {64, 64, 64, CU_AD_FORMAT_HALF, 1, 0};
	ASSERT_CU(cuArray3DCreate_v2(&b, &d3), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + sz + 512 * 1024);

	/* Mipmaps: 256x256 RGBA8 with 3 levels = 4 * (65536 + 16384 + 4096). */
	CUDA_ARRAY3D_DESCRIPTOR dm = {256, 256, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
	ASSERT_CU(cuMipmappedArrayCreate(&mm, &dm, 3), CUDA_SUCCESS);
	unsigned long long msz = (4ull * (65536 + 16384 + 4096) + 65535) / 65536 * 65536;
	ASSERT_CU(cuMipmappedArrayGetMemoryRequirements(&req, mm, 0), CUDA_SUCCESS);
	ASSERT_UEQ(req.size, msz);
	ASSERT_UEQ(sim_used(), base + sz + 512 * 1024 + msz);

	/* Errors. */
	CUDA_ARRAY_DESCRIPTOR bad = {0, 10, CU_AD_FORMAT_FLOAT, 1};
	ASSERT_CU(cuArrayCreate_v2(&b, &bad), CUDA_ERROR_INVALID_VALUE);
	bad.Width = 10;
	bad.NumChannels = 3;
	ASSERT_CU(cuArrayCreate_v2(&b, &bad), CUDA_ERROR_INVALID_VALUE);
	bad.NumChannels = 1;
	bad.Format = 0x77;
	ASSERT_CU(cuArrayCreate_v2(&b, &bad), CUDA_ERROR_INVALID_VALUE);
	ASSERT_CU(cuMipmappedArrayCreate(&mm, &dm, 0), CUDA_ERROR_INVALID_VALUE);
	CUDA_ARRAY_DESCRIPTOR huge = {1ull << 40, 1ull << 30, CU_AD_FORMAT_FLOAT, 4};
	ASSERT_CU(cuArrayCreate_v2(&b, &huge), CUDA_ERROR_INVALID_VALUE);      /* overflows */
	CUDA_ARRAY_DESCRIPTOR big = {1 << 20, 1 << 13, CU_AD_FORMAT_FLOAT, 1}; /* 32 GiB */
	ASSERT_CU(cuArrayCreate_v2(&b, &big), CUDA_ERROR_OUT_OF_MEMORY);

	ASSERT_CU(cuArrayDestroy(a), CUDA_SUCCESS);
	ASSERT_CU(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuArrayGetMemoryRequirements(&req, a, 0), CUDA_ERROR_INVALID_HANDLE);
	ASSERT_CU(cuMipmappedArrayDestroy(mm), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base + 512 * 1024);
	ASSERT_CU(cuArrayDestroy(b), CUDA_SUCCESS);
	ASSERT_UEQ(sim_used(), base);
	return 0;
}
