/*
 * device.c - devices as the driver API shows them: count, ordinal, name,
 * UUID, total memory, attributes (an H100/H200-like card: compute
 * capability 9.0, 132 SMs). Which devices are visible is init.c's.
 */
#include "driver.h"

#include "common/compiler.h"

#include <stdio.h>
#include <string.h>

CUresult simi_cuDeviceGet(CUdevice *device, int ordinal)
{
	SIM_LOCK_INIT();
	if (!device)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	if (ordinal < 0 || ordinal >= g_sim.ndev)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	*device = ordinal;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetCount(int *count)
{
	SIM_LOCK_INIT();
	if (!count)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*count = g_sim.ndev;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!name || len <= 0)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	snprintf(name, (size_t)len, "%s", sim_config()->dev[d->phys].name);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!uuid)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	memcpy(uuid->bytes, sim_config()->dev[d->phys].uuid, 16);
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

CUresult simi_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return simi_cuDeviceGetUuid(uuid, dev);
}

CUresult simi_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!bytes)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*bytes = d->card.file->total;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}

/* The 32-bit entry point: values above 4 GiB are clamped to UINT_MAX. */
CUresult simi_cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	size_t b;
	CUresult rc;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	rc = simi_cuDeviceTotalMem_v2(&b, dev);
	if (rc == CUDA_SUCCESS)
		*bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
	return rc;
}

CUresult simi_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	static const struct {
		int attr, value;
	} attrs[] = {
	    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
	    {2, 1024}, /* MAX_BLOCK_DIM_X */
	    {3, 1024},
	    {4, 64},
	    {5, 2147483647}, /* MAX_GRID_DIM_X */
	    {6, 65535},
	    {7, 65535},
	    {8, 49152}, /* MAX_SHARED_MEMORY_PER_BLOCK */
	    {9, 65536}, /* TOTAL_CONSTANT_MEMORY */
	    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
	    {12, 65536},   /* MAX_REGISTERS_PER_BLOCK */
	    {13, 1980000}, /* CLOCK_RATE (kHz) */
	    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
	    {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
	    {19, 1},        /* CAN_MAP_HOST_MEMORY */
	    {36, 2619000},  /* MEMORY_CLOCK_RATE */
	    {37, 5120},     /* GLOBAL_MEMORY_BUS_WIDTH */
	    {38, 52428800}, /* L2_CACHE_SIZE */
	    {39, 2048},     /* MAX_THREADS_PER_MULTIPROCESSOR */
	    {40, 3},        /* ASYNC_ENGINE_COUNT */
	    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
	    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
	    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
	    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
	    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0},
	};
	SIM_LOCK_INIT();
	struct sim_dev *d = sim_dev_get(dev);
	if (!d)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_DEVICE);
	if (!pi || attrib <= 0 || attrib > 200)
		SIM_UNLOCK_RETURN(CUDA_ERROR_INVALID_VALUE);
	*pi = 0; /* attributes not modelled read as 0 (unsupported / none) */
	for (size_t i = 0; i < VR_ARRAY_LEN(attrs); i++)
		if (attrs[i].attr == attrib)
			*pi = attrs[i].value;
	if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
		*pi = 0x18 + d->phys;
	if (attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
		*pi = sim_config()->dev[d->phys].compute_mode;
	if (attrib == CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
		*pi = sim_config()->host_vmm;
	SIM_UNLOCK_RETURN(CUDA_SUCCESS);
}
