/*
 * devices.c - the devices a command will see, as the driver reports them.
 *
 * `vramctl run` checks every DEV in --limit against these before anything
 * runs. The driver is loaded exactly as the injected library loads it
 * ($VRAMCTL_DRIVER, else "libcuda.so.1" through the loader's search), and it
 * applies CUDA_VISIBLE_DEVICES itself, so the indices here are the ones the
 * program will use.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/devices.h"
#include "common/contract.h"
#include "common/cuda_api.h"
#include "common/size.h"

int cli_devices(struct vr_launch_dev *devs, int max, char *err, size_t errlen)
{
	const char *path = getenv(VR_ENV_DRIVER);
	vr_pfn_cuInit init;
	vr_pfn_cuDeviceGetCount get_count;
	vr_pfn_cuDeviceGet get;
	vr_pfn_cuDeviceGetUuid_v2 get_uuid;
	vr_pfn_cuDeviceTotalMem_v2 total_mem;
	void *h;
	int count = 0;
	CUresult rc;

	if (!path || !*path)
		path = "libcuda.so.1";
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "cannot load the CUDA driver (%s)", dlerror());
		return -1;
	}
	init = (vr_pfn_cuInit)dlsym(h, "cuInit");
	get_count = (vr_pfn_cuDeviceGetCount)dlsym(h, "cuDeviceGetCount");
	get = (vr_pfn_cuDeviceGet)dlsym(h, "cuDeviceGet");
	get_uuid = (vr_pfn_cuDeviceGetUuid_v2)dlsym(h, "cuDeviceGetUuid_v2");
	total_mem = (vr_pfn_cuDeviceTotalMem_v2)dlsym(h, "cuDeviceTotalMem_v2");
	if (!init || !get_count || !get || !get_uuid || !total_mem) {
		snprintf(err, errlen, "%s is not a usable CUDA driver (missing entry points)",
		         path);
		return -1;
	}
	rc = init(0);
	if (rc == CUDA_ERROR_NO_DEVICE)
		return 0;
	if (rc != CUDA_SUCCESS) {
		snprintf(err, errlen, "the CUDA driver failed to initialise (cuInit: error %d)",
		         rc);
		return -1;
	}
	rc = get_count(&count);
	if (rc != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuDeviceGetCount failed (error %d)", rc);
		return -1;
	}
	if (count > max)
		count = max;
	for (int i = 0; i < count; i++) {
		CUdevice dev;
		CUuuid uuid;
		size_t total = 0;

		rc = get(&dev, i);
		if (rc == CUDA_SUCCESS)
			rc = get_uuid(&uuid, dev);
		if (rc == CUDA_SUCCESS)
			rc = total_mem(&total, dev);
		if (rc != CUDA_SUCCESS) {
			snprintf(err, errlen, "cannot query device %d (error %d)", i, rc);
			return -1;
		}
		devs[i].index = i;
		memcpy(devs[i].raw, uuid.bytes, sizeof(devs[i].raw));
		vr_format_uuid(devs[i].raw, devs[i].uuid, sizeof(devs[i].uuid));
		devs[i].total = total;
	}
	return count;
}

int cli_driver_is_sim(void)
{
	const char *path = getenv(VR_ENV_DRIVER);
	void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int sim = h && dlsym(h, "vramsim_take") != NULL;

	if (h)
		dlclose(h);
	return sim;
}
