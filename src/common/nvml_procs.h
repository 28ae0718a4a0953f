/*
 * nvml_procs.h - the compute processes NVML lists on a device, read the one
 * careful way (nvml_procs.c says how), for the monitor and the injected
 * library alike. libc only: the caller resolves NVML's entry points.
 */
#ifndef VRAMCTL_NVML_PROCS_H
#define VRAMCTL_NVML_PROCS_H

#include "common/nvml_api.h"

/* The three list calls differ only in their entry layout: one type, an
 * untyped buffer. */
typedef nvmlReturn_t (*vr_nvml_procs_fn)(nvmlDevice_t, unsigned int *, void *);

struct vr_nvml_procs_api {
	vr_nvml_procs_fn v3, v2, v1; /* ..._v3, ..._v2, the plain call; NULL when missing */
};

struct vr_nvml_proc {
	unsigned int pid;        /* a host PID */
	unsigned long long used; /* NVML_VALUE_NOT_AVAILABLE: unknown */
};

/*
 * Reads the compute processes on h with _v3, else _v2, else the plain
 * call. Returns NVML_SUCCESS with *out malloc'ed (NULL when *n is 0) and
 * *api naming the call that answered ("v3", "v2", "v1"); or the last
 * error (NVML_ERROR_FUNCTION_NOT_FOUND when there is no call), with *out
 * NULL and *n 0.
 */
nvmlReturn_t vr_nvml_procs(const struct vr_nvml_procs_api *a, nvmlDevice_t h,
                           struct vr_nvml_proc **out, unsigned *n, const char **api);

#endif /* VRAMCTL_NVML_PROCS_H */
