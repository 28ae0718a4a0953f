/*
 * nvml_procs.c - NVML's list of compute processes on a device.
 *
 * NVML's traps and what this file does about each:
 *  - The running-process struct changed size without a version bump: R535
 *    drivers' _v3 call writes 32-byte entries (with usedGpuCcProtectedMemory),
 *    others 24-byte ones. We give _v3 a buffer with room for 32-byte entries,
 *    filled with a pattern, and take the stride from how far NVML wrote.
 *    pid and usedGpuMemory sit at offsets 0 and 8 in every layout.
 *  - _v3 is missing on older drivers: fall back to _v2, then the plain call
 *    (16-byte entries).
 *  - The list is read with the NVML_ERROR_INSUFFICIENT_SIZE protocol: ask
 *    with count 0, then with room for the answer plus slack, retrying if the
 *    list grew in between.
 */
#include <stdlib.h>
#include <string.h>

#include "common/nvml_procs.h"

#define PATTERN 0xA5

/*
 * Calls one form of the process list with the INSUFFICIENT_SIZE protocol.
 * stride: the entry size to allocate for (the largest one expected); *n gets
 * the entry count and *buf a malloc'ed buffer (or NULL when n is 0).
 * Returns the NVML result.
 */
static nvmlReturn_t get_procs(vr_nvml_procs_fn call, nvmlDevice_t h, size_t stride, unsigned *n,
                              unsigned char **buf, size_t *buflen)
{
	*buf = NULL;
	*n = 0;
	unsigned want = 0;
	nvmlReturn_t r = call(h, &want, NULL);
	if (r == NVML_SUCCESS)
		return NVML_SUCCESS; /* no process */
	for (int tries = 0; tries < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; tries++) {
		unsigned room = want + 8; /* the list may grow before the next call */
		free(*buf);
		*buflen = (size_t)room * stride;
		*buf = malloc(*buflen);
		if (!*buf)
			return NVML_ERROR_MEMORY;
		memset(*buf, PATTERN, *buflen);
		want = room;
		r = call(h, &want, *buf);
	}
	if (r != NVML_SUCCESS) {
		free(*buf);
		*buf = NULL;
		return r;
	}
	*n = want;
	return NVML_SUCCESS;
}

/* The stride _v3 really wrote: the smallest layout that covers the bytes it wrote. */
static size_t probe_stride(const unsigned char *buf, size_t len, unsigned n)
{
	size_t last = 0;
	for (size_t i = len; i > 0; i--)
		if (buf[i - 1] != PATTERN) {
			last = i;
			break;
		}
	static const size_t strides[] = {16, 24, 32};
	for (size_t i = 0; i < 3; i++)
		if ((size_t)n * strides[i] >= last)
			return strides[i];
	return 32;
}

nvmlReturn_t vr_nvml_procs(const struct vr_nvml_procs_api *a, nvmlDevice_t h,
                           struct vr_nvml_proc **out, unsigned *n, const char **api)
{
	unsigned char *buf = NULL;
	size_t len = 0, stride = 0;
	nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
	*out = NULL;
	*n = 0;
	*api = "";
	if (a->v3) {
		r = get_procs(a->v3, h, 32, n, &buf, &len);
		stride = buf ? probe_stride(buf, len, *n) : 24;
		*api = "v3";
	}
	if (r != NVML_SUCCESS && a->v2) {
		r = get_procs(a->v2, h, 24, n, &buf, &len);
		stride = 24;
		*api = "v2";
	}
	if (r != NVML_SUCCESS && a->v1) {
		r = get_procs(a->v1, h, 16, n, &buf, &len);
		stride = 16;
		*api = "v1";
	}
	if (r != NVML_SUCCESS) {
		*api = "";
		*n = 0;
		return r;
	}
	if (*n) {
		*out = malloc(sizeof(**out) * *n);
		if (!*out) {
			free(buf);
			*n = 0;
			*api = "";
			return NVML_ERROR_MEMORY;
		}
	}
	for (unsigned i = 0; i < *n; i++) {
		const unsigned char *e = buf + (size_t)i * stride;
		memcpy(&(*out)[i].pid, e, sizeof((*out)[i].pid));
		memcpy(&(*out)[i].used, e + 8, sizeof((*out)[i].used));
	}
	free(buf);
	return NVML_SUCCESS;
}
