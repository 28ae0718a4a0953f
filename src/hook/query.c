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
 * usage is over the cap.
 */
#include <string.h>

#define VR_CUDA_PROTOTYPES
#define VR_NVML_PROTOTYPES
#include "hook/hook.h"

/* Applies d's cap to a (free, total) pair from the driver. */
static void clamp(struct vr_dev *d, uint64_t *freep, uint64_t *totalp)
{
	if (atomic_load_explicit(&vr_pools_count, memory_order_relaxed))
		vr_pools_settle_all();
	uint64_t used = vr_books_in_use(d);
	uint64_t room = used < d->cap ? d->cap - used : 0;
	if (*totalp > d->cap)
		*totalp = d->cap;
	if (*freep > room)
		*freep = room;
	if (*freep > *totalp)
		*freep = *totalp;
}

VR_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	VR_PASS(cuMemGetInfo_v2, (free, total));
	CUresult rc = vr_real.cuMemGetInfo_v2(free, total);
	struct vr_dev *d;
	if (rc != CUDA_SUCCESS || !free || !total || !(d = vr_dev_current()) || !d->capped)
		return rc;
	uint64_t f = *free, t = *total;
	clamp(d, &f, &t);
	*free = f;
	*total = t;
	return rc;
}

VR_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
	VR_PASS(cuMemGetInfo, (free, total));
	CUresult rc = vr_real.cuMemGetInfo(free, total);
	struct vr_dev *d;
	if (rc != CUDA_SUCCESS || !free || !total || !(d = vr_dev_current()) || !d->capped)
		return rc;
	uint64_t f = *free, t = *total;
	clamp(d, &f, &t);
	*free = (unsigned int)f;
	*total = (unsigned int)t;
	return rc;
}

VR_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	VR_PASS(cuDeviceTotalMem_v2, (bytes, dev));
	CUresult rc = vr_real.cuDeviceTotalMem_v2(bytes, dev);
	struct vr_dev *d;
	if (rc == CUDA_SUCCESS && bytes && (d = vr_dev_by_handle(dev)) && d->capped &&
	    *bytes > d->cap)
		*bytes = d->cap;
	return rc;
}

VR_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	VR_PASS(cuDeviceTotalMem, (bytes, dev));
	CUresult rc = vr_real.cuDeviceTotalMem(bytes, dev);
	struct vr_dev *d;
	if (rc == CUDA_SUCCESS && bytes && (d = vr_dev_by_handle(dev)) && d->capped &&
	    *bytes > d->cap)
		*bytes = (unsigned int)d->cap;
	return rc;
}

/* ---- NVML ------------------------------------------------------------ */

/* The program's device behind an NVML handle, when it is capped. */
static struct vr_dev *nvml_dev(nvmlDevice_t device)
{
	char uuid[96];
	if (!vr_g.active || vr_in_hook || !vr_real.nvmlDeviceGetUUID || vr_driver_init() != 0)
		return NULL;
	vr_in_hook++;
	nvmlReturn_t rc = vr_real.nvmlDeviceGetUUID(device, uuid, sizeof uuid);
	vr_in_hook--;
	if (rc != NVML_SUCCESS)
		return NULL;
	struct vr_dev *d = vr_dev_by_uuid_text(uuid);
	return d && d->capped ? d : NULL;
}

VR_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	if (vr_nvml_init() != 0 || !vr_real.nvmlDeviceGetMemoryInfo)
		return NVML_ERROR_UNINITIALIZED;
	nvmlReturn_t rc = vr_real.nvmlDeviceGetMemoryInfo(device, memory);
	struct vr_dev *d;
	if (rc != NVML_SUCCESS || !memory || !(d = nvml_dev(device)))
		return rc;
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
	if (rc != NVML_SUCCESS || !memory || !(d = nvml_dev(device)))
		return rc;
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
