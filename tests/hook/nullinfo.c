/*
 * nullinfo - a stand-in for a driver whose cuMemGetInfo accepts a NULL
 * pointer and fills the other (whether NVIDIA's does is what
 * bench/gpu/driver_facts records): loaded as VRAMCTL_DRIVER by
 * test_null_info, it answers cuMemGetInfo[_v2] itself, with the figures of
 * an empty 16 GiB card, and leaves every other entry point to the
 * simulator it is linked against.
 */
#include <stddef.h>

#define VR_CUDA_PROTOTYPES
#include "common/cuda_api.h"

#define CARD (16ull << 30)

__attribute__((visibility("default"))) CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
	if (free_b)
		*free_b = CARD;
	if (total)
		*total = CARD;
	return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuMemGetInfo(unsigned int *free_b,
                                                             unsigned int *total)
{
	if (free_b)
		*free_b = 0xffffffffu;
	if (total)
		*total = 0xffffffffu;
	return CUDA_SUCCESS;
}
