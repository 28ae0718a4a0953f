/*
 * query.c - what the program sees under a cap. Every memory question gets
 * the same numbers, so each framework sizes itself inside the cap:
 *
 *   total = min(cap, physical total)
 *   free  = min(cap - group in-use, physical free), never below zero
 *
 * cuMemGetInfo[_v2] (TensorFlow, JAX, CuPy), cuDeviceTotalMem[_v2]
 * (PyTorch's totalGlobalMem) and NVML nvmlDeviceGetMemoryInfo[_v2]
 * (PyTorch's OOM text, nvidia-smi-like tools). The driver is always asked
 * first: its errors are returned unchanged, and a query never fails because
 * usage is over the cap. If the device cannot be identified (a look-up that
 * fails), the query returns that look-up's error rather than the whole
 * device's numbers.
 */
#include <string.h>

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "hook/devices.h"
#include "hook/policy.h"
#include "hook/pools.h"

/* Applies d's cap to a (free, total) pair from the driver, with the pools'
 * charges brought up to date first. */
static void clamp(struct vr_dev *d, uint64_t *freep, uint64_t *totalp)
{
	if (atomic_load_explicit(&vr_pools_count, memory_order_relaxed))
		vr_pools_settle_all();
	vr_policy_view(d, freep, totalp);
}

/* cuMemGetInfo[_v2]: the driver's (free, total), clamped on a capped device;
 * the two differ only in the width of the numbers. A NULL pointer (OptiX
 * passes free = NULL) is the driver's to answer, as it is without vramctl
 * (cuda.h: CUDA_ERROR_INVALID_VALUE; bench/gpu/driver_facts records what a
 * real one does): whatever it answered for the other is clamped, and only
 * what the program asked for is written. */
#define VR_MEM_GET_INFO(name, type)                                                                \
	VR_EXPORT CUresult name(type *free, type *total)                                           \
	{                                                                                          \
		VR_PASS(name, (free, total));                                                      \
		CUresult rc = vr_real.name(free, total);                                           \
		struct vr_dev *d;                                                                  \
		if (rc != CUDA_SUCCESS || (!free && !total))                                       \
			return rc;                                                                 \
		CUresult dev_rc = vr_dev_for_alloc(&d);                                            \
		if (dev_rc != CUDA_SUCCESS)                                                        \
			return dev_rc; /* never the whole device in silence */                     \
		if (!vr_dev_capped(d))                                                             \
			return rc;                                                                 \
		uint64_t f = free ? *free : UINT64_MAX, t = total ? *total : UINT64_MAX;           \
		clamp(d, &f, &t);                                                                  \
		if (free)                                                                          \
			*free = (type)f;                                                           \
		if (total)                                                                         \
			*total = (type)t;                                                          \
		return rc;                                                                         \
	}
VR_MEM_GET_INFO(cuMemGetInfo_v2, size_t)
VR_MEM_GET_INFO(cuMemGetInfo, unsigned int)

/* cuDeviceTotalMem[_v2]: the driver's total, at most the cap. */
#define VR_DEVICE_TOTAL_MEM(name, type)                                                            \
	VR_EXPORT CUresult name(type *bytes, CUdevice dev)                                         \
	{                                                                                          \
		VR_PASS(name, (bytes, dev));                                                       \
		CUresult rc = vr_real.name(bytes, dev);                                            \
		struct vr_dev *d;                                                                  \
		if (rc != CUDA_SUCCESS || !bytes)                                                  \
			return rc;                                                                 \
		CUresult dev_rc = vr_dev_for_handle(dev, &d);                                      \
		if (dev_rc != CUDA_SUCCESS)                                                        \
			return dev_rc; /* never the whole device in silence */                     \
		*bytes = (type)vr_policy_total(d, *bytes);                                         \
		return rc;                                                                         \
	}
VR_DEVICE_TOTAL_MEM(cuDeviceTotalMem_v2, size_t)
VR_DEVICE_TOTAL_MEM(cuDeviceTotalMem, unsigned int)

/* ---- NVML ------------------------------------------------------------ */

/*
 * The program's capped device behind an NVML handle into *out (NULL: not
 * one of the program's devices, or uncapped). Returns NVML_SUCCESS, or an
 * error when nobody can tell (the driver not loaded, the UUID or the device
 * look-up failing): the query then returns it rather than the whole device.
 */
static nvmlReturn_t nvml_dev(nvmlDevice_t device, struct vr_dev **out)
{
	char uuid[96];
	struct vr_dev *d;
	*out = NULL;
	if (!vr_g.active || vr_in_hook)
		return NVML_SUCCESS;
	if (!vr_real.nvmlDeviceGetUUID || vr_driver_init() != 0)
		return NVML_ERROR_UNINITIALIZED;
	nvmlReturn_t rc;
	VR_OWN(rc = vr_real.nvmlDeviceGetUUID(device, uuid, sizeof uuid));
	if (rc != NVML_SUCCESS)
		return rc;
	if (vr_dev_for_uuid_text(uuid, &d) != CUDA_SUCCESS)
		return NVML_ERROR_UNKNOWN;
	*out = d && vr_dev_capped(d) ? d : NULL;
	return NVML_SUCCESS;
}

VR_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	if (vr_nvml_init() != 0 || !vr_real.nvmlDeviceGetMemoryInfo)
		return NVML_ERROR_UNINITIALIZED;
	nvmlReturn_t rc = vr_real.nvmlDeviceGetMemoryInfo(device, memory);
	struct vr_dev *d;
	if (rc != NVML_SUCCESS || !memory)
		return rc;
	nvmlReturn_t dev_rc = nvml_dev(device, &d);
	if (dev_rc != NVML_SUCCESS || !d)
		return dev_rc;
	uint64_t f = memory->free, t = memory->total;
	clamp(d, &f, &t);
	memory->total = t;
	memory->free = f;
	memory->used = t - f;
	return rc;
}

VR_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	if (vr_nvml_init() != 0 || !vr_real.nvmlDeviceGetMemoryInfo_v2)
		return NVML_ERROR_UNINITIALIZED;
	nvmlReturn_t rc = vr_real.nvmlDeviceGetMemoryInfo_v2(device, memory);
	struct vr_dev *d;
	if (rc != NVML_SUCCESS || !memory)
		return rc;
	nvmlReturn_t dev_rc = nvml_dev(device, &d);
	if (dev_rc != NVML_SUCCESS || !d)
		return dev_rc;
	uint64_t f = memory->free, t = memory->total;
	clamp(d, &f, &t);
	uint64_t taken = t - f;
	memory->total = t;
	memory->free = f;
	if (memory->reserved > taken)
		memory->reserved = taken;
	memory->used = taken - memory->reserved;
	return rc;
}
