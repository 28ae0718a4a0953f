/*
 * drvlimit.c - the driver's per-cgroup memory limits through NVML
 * (drvlimit.h). Looked up by name each call: drivers before R615 lack both
 * entry points, and that is an answer, not an error to report loudly.
 */
#include "monitor/drvlimit.h"

#include <stdio.h>

#include "common/nvml_api.h"

/* The handle of the device with this UUID, or an NVML error (text in err). */
static int handle(struct mon_nvml *nv, const char *uuid, nvmlDevice_t *h, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceGetHandleByUUID by_uuid =
	    (vr_pfn_nvmlDeviceGetHandleByUUID)mon_nvml_sym(nv, "nvmlDeviceGetHandleByUUID");
	if (!by_uuid) {
		snprintf(err, errlen, "NVML has no nvmlDeviceGetHandleByUUID");
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	}
	int r = by_uuid(uuid, h);
	if (r != NVML_SUCCESS)
		snprintf(err, errlen, "%s: %s", uuid, mon_nvml_error(nv, r));
	return r;
}

static int missing(const char *name, char *err, size_t errlen)
{
	snprintf(err, errlen, "this NVML has no %s (a driver before R%d)", name,
	         MON_DRVLIMIT_RELEASE);
	return NVML_ERROR_FUNCTION_NOT_FOUND;
}

int mon_drvlimit_get(struct mon_nvml *nv, const char *uuid, const char *ns,
                     struct mon_drvlimit *out, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceGetMemoryLimits_v1 get =
	    (vr_pfn_nvmlDeviceGetMemoryLimits_v1)mon_nvml_sym(nv, "nvmlDeviceGetMemoryLimits_v1");
	nvmlDevice_t h;
	if (!get)
		return missing("nvmlDeviceGetMemoryLimits_v1", err, errlen);
	int r = handle(nv, uuid, &h, err, errlen);
	if (r != NVML_SUCCESS)
		return r;
	nvmlGetMemoryLimits_v1_t l = {.nameSpace = ns};
	r = get(h, &l);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "%s", mon_nvml_error(nv, r));
		return r;
	}
	out->soft = l.softLimit;
	out->hard = l.hardLimit;
	out->used = l.currentUsed;
	return NVML_SUCCESS;
}

int mon_drvlimit_set(struct mon_nvml *nv, const char *uuid, const char *ns, unsigned long long soft,
                     unsigned long long hard, char *err, size_t errlen)
{
	vr_pfn_nvmlDeviceSetMemoryLimits_v1 set =
	    (vr_pfn_nvmlDeviceSetMemoryLimits_v1)mon_nvml_sym(nv, "nvmlDeviceSetMemoryLimits_v1");
	nvmlDevice_t h;
	if (!set)
		return missing("nvmlDeviceSetMemoryLimits_v1", err, errlen);
	int r = handle(nv, uuid, &h, err, errlen);
	if (r != NVML_SUCCESS)
		return r;
	nvmlSetMemoryLimits_v1_t l = {.nameSpace = ns, .softLimit = soft, .hardLimit = hard};
	r = set(h, &l);
	if (r != NVML_SUCCESS)
		snprintf(err, errlen, "%s", mon_nvml_error(nv, r));
	return r;
}

int mon_drvlimit_is_set(const struct mon_drvlimit *l)
{
	return l->hard != NVML_DEVICE_MEMORY_LIMIT_MAX;
}
