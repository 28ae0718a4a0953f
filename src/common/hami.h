/*
 * hami.h - HAMi's container contract, read by vramctl's injected library.
 *
 * HAMi's device plugin (Project-HAMi/HAMi,
 * pkg/device-plugin/nvidiadevice/nvinternal/plugin/server.go, Allocate) gives
 * each container its share as environment variables read by its in-container
 * library (HAMi-core's libvgpu.so):
 *
 *   CUDA_DEVICE_MEMORY_LIMIT      the cap of every device
 *   CUDA_DEVICE_MEMORY_LIMIT_<i>  the cap of device i as the program sees it
 *                                 (the plugin writes "<MiB>m")
 *   CUDA_DEVICE_MEMORY_SHARED_CACHE  <hook path>/vgpu/<uuid>.cache, one per
 *                                 container, in a host directory of its own
 *   LIBCUDA_LOG_LEVEL             0 errors ... 4 debug
 *   CUDA_DISABLE_CONTROL          "true": HAMi's library does nothing
 *
 * vr_hami_read translates them into vramctl's own terms. Pure code: no
 * allocation, no global state, libc only (the library calls it before main).
 */
#ifndef VRAMCTL_HAMI_H
#define VRAMCTL_HAMI_H

#include <stddef.h>
#include <stdint.h>

#include "common/contract.h"

#define VR_HAMI_LIMIT           "CUDA_DEVICE_MEMORY_LIMIT"
#define VR_HAMI_SHARED_CACHE    "CUDA_DEVICE_MEMORY_SHARED_CACHE"
#define VR_HAMI_LOG_LEVEL       "LIBCUDA_LOG_LEVEL"
#define VR_HAMI_DISABLE_CONTROL "CUDA_DISABLE_CONTROL"

/* Device indexes 0..VR_HAMI_MAX_DEV-1; "i=18446744073709551615," fits in 32. */
#define VR_HAMI_MAX_DEV    64
#define VR_HAMI_LIMIT_TEXT (32 * (VR_HAMI_MAX_DEV + 1))

struct vr_hami {
	int present;  /* some CUDA_DEVICE_MEMORY_LIMIT[_<i>] is set (and not disabled) */
	int disabled; /* CUDA_DISABLE_CONTROL is true: HAMi's contract is off */
	char limit[VR_HAMI_LIMIT_TEXT]; /* the caps as a VRAMCTL_LIMIT spec; "" none */
	char group[VR_GROUP_NAME_MAX +
	           1]; /* "hami-<cache file's name>", "" without a shared cache */
	char dir[512]; /* "<cache file's directory>/vramctl", "" without one */
	int log_level; /* -1 unset, else as VRAMCTL_LOG: 1 error, 2 warn, 3 info, 4 debug */
};

/*
 * HAMi's sizes, strictly: decimal digits, then nothing (bytes) or one of
 * k, m, g (either case; powers of 1024). "1g", "1024m", "1048576k" and
 * "1073741824" are all 1 GiB. Zero, signs, spaces, fractions, other units
 * and overflow are refused. Returns 0, or -EINVAL/-ERANGE with a message
 * naming the text in err; *out untouched on error.
 */
int vr_hami_size(const char *text, uint64_t *out, char *err, size_t errlen);

/*
 * Reads HAMi's variables from env (a NULL-terminated "NAME=VALUE" array, as
 * environ). Always fills *out. Returns 0, or -EINVAL with a one-line reason
 * in err when a limit variable is malformed (a bad size, a bad device
 * index, too many): whoever set it asked for a cap, so the caller fails
 * closed. A bad log level or shared-cache path is not an error (they are
 * left unset; *warn, when not NULL, gets a line to say so).
 */
int vr_hami_read(const char *const *env, struct vr_hami *out, char *err, size_t errlen, char *warn,
                 size_t warnlen);

#endif /* VRAMCTL_HAMI_H */
