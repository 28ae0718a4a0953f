/*
 * drvlimit.h - the NVIDIA driver's own memory limits per cgroup (R615,
 * "MPS v3 memory partitioning": nvmlDeviceSetMemoryLimits_v1, root only,
 * and nvmlDeviceGetMemoryLimits_v1, anyone), through the monitor's NVML.
 * vramctl's second enforcer beside the injected library (docs/usage.md,
 * "Two enforcers").
 */
#ifndef VRAMCTL_MONITOR_DRVLIMIT_H
#define VRAMCTL_MONITOR_DRVLIMIT_H

#include <stddef.h>

#include "monitor/model.h"
#include "monitor/nvml.h"

/* The first driver release with the limits. */
#define MON_DRVLIMIT_RELEASE 615

/* A cgroup's limits on one device; hard NVML_DEVICE_MEMORY_LIMIT_MAX: none. */
struct mon_drvlimit {
	unsigned long long soft, hard;
	unsigned long long used; /* what the cgroup (and below) holds on the device */
};

/*
 * Reads the limits of the cgroup NVML names ns ("/sys/fs/cgroup/a/b",
 * vr_cgroup2_ns) on the device with this UUID. Returns NVML_SUCCESS, or an
 * NVML error with its text in err: NVML_ERROR_FUNCTION_NOT_FOUND when this
 * NVML lacks the entry point (a driver before R615), NOT_SUPPORTED where
 * the driver has no limits there (MIG, an older driver). out is untouched on
 * error.
 */
int mon_drvlimit_get(struct mon_nvml *nv, const char *uuid, const char *ns,
                     struct mon_drvlimit *out, char *err, size_t errlen);

/*
 * Sets the soft and hard limit of ns on the device with this UUID (root
 * only: NVML_ERROR_NO_PERMISSION otherwise); soft 0 and hard
 * NVML_DEVICE_MEMORY_LIMIT_MAX clear them. Errors as mon_drvlimit_get.
 */
int mon_drvlimit_set(struct mon_nvml *nv, const char *uuid, const char *ns, unsigned long long soft,
                     unsigned long long hard, char *err, size_t errlen);

/*
 * Clears the limits of ns on the device with this UUID as NVIDIA asks:
 * the soft limit first (to 0, the hard one kept), then the hard one (to
 * NVML_DEVICE_MEMORY_LIMIT_MAX). Nothing to clear is success. Errors as
 * mon_drvlimit_get.
 */
int mon_drvlimit_clear(struct mon_nvml *nv, const char *uuid, const char *ns, char *err,
                       size_t errlen);

/*
 * The UUID ("GPU-...") and the memory the driver gives programs (NVML's
 * total less what the driver reserves) of the device NVML numbers index.
 * Returns NVML_SUCCESS, or an NVML error with its text in err.
 */
int mon_drvlimit_device(struct mon_nvml *nv, unsigned index, char *uuid, size_t ulen,
                        unsigned long long *total, char *err, size_t errlen);

/*
 * For each live process of m on a known GPU: the tightest driver limit over
 * its cgroup (proc_root/PID/cgroup; proc_root NULL: /proc) and its
 * ancestors, with NVML's unprivileged call: MON_P_DRVLIMIT and p->drv set
 * where there is one; each group's ndriver counted. One NVML question per
 * cgroup level and GPU, asked once per collection. Nothing is noted where
 * the driver has no limits (most drivers): the fields stay clear.
 */
void mon_drvlimit_fill(struct mon_nvml *nv, struct mon_model *m, const char *proc_root);

/*
 * 1 when the driver can limit ns on the device with this UUID: its "get
 * limits" answers, or answers NOT_SUPPORTED from a driver of release
 * MON_DRVLIMIT_RELEASE or later, which answers so for a cgroup with no
 * limit set as where it cannot limit (so it is read by the release, never
 * as "cannot"). 0 otherwise (an older driver, NVML without the entry).
 */
int mon_drvlimit_can(struct mon_nvml *nv, const char *uuid, const char *ns);

/* 1 when hard is a limit (not NVML_DEVICE_MEMORY_LIMIT_MAX). */
int mon_drvlimit_is_set(const struct mon_drvlimit *l);

#endif /* VRAMCTL_MONITOR_DRVLIMIT_H */
