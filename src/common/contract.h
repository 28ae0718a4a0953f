/*
 * contract.h - the environment contract between whoever launches a program
 * under vramctl (the CLI, the Slurm plugin, a Kubernetes spec, a user) and
 * the injected library. The library reads these once, at its first use; the
 * table in docs/usage.md ("The environment contract") and vramctl(1)
 * document each one. Nothing else configures policy.
 */
#ifndef VRAMCTL_CONTRACT_H
#define VRAMCTL_CONTRACT_H

#include <stddef.h>

/* Cap spec (size.h grammar). Unset: no cap, the library is invisible. */
#define VR_ENV_LIMIT "VRAMCTL_LIMIT"
/* Guarantee spec (size.h grammar, percentages of the device's total, as the
 * cap's): memory the group can always reach on each device, up to its cap
 * there. Read only under a cap; malformed: fails closed as a
 * malformed cap does. Unset: no guarantee. */
#define VR_ENV_GUARANTEE "VRAMCTL_GUARANTEE"
/* Spill past the cap to host memory the GPU reads in place (docs/spill.md):
 * the group's host budget, SIZE | "auto" | "0" (spill.h). Unset: no spill. */
#define VR_ENV_SPILL "VRAMCTL_SPILL"
/* Waiting instead of out-of-memory: an allocation the group's cap or
 * the card's guarantees refuse waits for room up to TIME (duration.h:
 * seconds, or 30s, 2m), then is refused as usual. Unset or 0: no wait.
 * Read only under a cap; a bad value is said and means no wait. */
#define VR_ENV_WAIT "VRAMCTL_WAIT"
/* Parking: DURATION (duration.h) a process whose driver calls stay
 * idle that long is parked (its device memory moved to host memory by the
 * driver's checkpoint API, brought back at its next call); "manual": it
 * can be parked (vramctl park, guarantees) but not for idleness. Unset: it
 * is never parked. VRAMCTL_PARK_BUDGET: the group's host budget for its
 * parked members, SIZE | "auto" | "0" (spill.h's grammar; default auto). */
#define VR_ENV_PARK_IDLE   "VRAMCTL_PARK_IDLE"
#define VR_ENV_PARK_BUDGET "VRAMCTL_PARK_BUDGET"
/* "1": frameworks that preallocate grow on demand instead. */
#define VR_ENV_GROWTH "VRAMCTL_GROWTH"
/* Group name: processes with the same name share one cap per device. */
#define VR_ENV_GROUP "VRAMCTL_GROUP"
/* Who a process is in Kubernetes, as its pod spec says (the downward API's
 * metadata.name and metadata.namespace, and the container's name written
 * literally): read by the monitor (status, export), never by the policy.
 * A member records them at its join (registry/ident.c); others' are read
 * from /proc/PID/environ. */
#define VR_ENV_POD_NAME       "VRAMCTL_POD_NAME"
#define VR_ENV_POD_NAMESPACE  "VRAMCTL_POD_NAMESPACE"
#define VR_ENV_CONTAINER_NAME "VRAMCTL_CONTAINER_NAME"
/* Registry directory (default $XDG_RUNTIME_DIR/vramctl, else
 * VR_DEFAULT_DIR_PREFIX followed by the effective uid, or a directory in the
 * home when another user took that name: vr_default_dir). */
#define VR_ENV_REGISTRY_DIR "VRAMCTL_REGISTRY_DIR"
/* Where the device books (guarantees) live: root's directory, an
 * absolute path; default /run/vramctl (registry/devbook.h). */
#define VR_ENV_DEVICE_DIR "VRAMCTL_DEVICE_DIR"
/* The name of the group's guarantee in the device book, set by a root
 * launcher that admitted it for the group (the Slurm plugin): 16 hex
 * digits. Members find their entry by its hash; without it, by the hash of
 * their books' key. */
#define VR_ENV_GUARANTEE_TOKEN "VRAMCTL_GUARANTEE_TOKEN"
/* The guard service's socket (registry/devguard.h); default
 * /run/vramctl/guard.sock. */
#define VR_ENV_GUARD_SOCKET   "VRAMCTL_GUARD_SOCKET"
#define VR_DEFAULT_DIR_PREFIX "/tmp/vramctl-"
/* Path of the real driver library; default: found as the loader would. */
#define VR_ENV_DRIVER "VRAMCTL_DRIVER"
/* Path of the real NVML library; default: libnvidia-ml.so.1. */
#define VR_ENV_NVML "VRAMCTL_NVML"
/* Messages: "quiet", "error", "warn" (default), "info", "debug". */
#define VR_ENV_LOG "VRAMCTL_LOG"

/*
 * The contract as a file, for processes whose environment has none: lines
 * NAME=value of the variables above (VRAMCTL_LIMIT, VRAMCTL_GROUP,
 * VRAMCTL_REGISTRY_DIR, VRAMCTL_COUNT, VRAMCTL_SPILL, VRAMCTL_GROWTH,
 * VRAMCTL_GUARANTEE, VRAMCTL_WAIT, VRAMCTL_PARK_IDLE,
 * VRAMCTL_PARK_BUDGET), '#' comments. The CDI spec mounts one, read-only,
 * into each capped container, so that `env -u VRAMCTL_LIMIT`, `env -i`,
 * an ssh session or `podman exec` there stay capped. Believed only when
 * root owns it and nobody else can write it, or it is on a read-only mount.
 */
#define VR_CONTRACT_FILE "/etc/vramctl/contract"

/* What the cap counts: "card" (default: all the card holds for the
 * process, as NVML counts it per process: its allocations plus its context,
 * modules and the driver's own use) or "allocations" (only what the
 * program allocates, as the cap counted before it counted the card).
 * vramctl run --count. */
#define VR_ENV_COUNT "VRAMCTL_COUNT"

/*
 * Group names, one rule for the registry and every launcher: 1 to
 * VR_GROUP_NAME_MAX of A-Z a-z 0-9 . _ -, not starting with '.' (the region
 * file is "<name>.vrg" in the registry directory, and names starting with a
 * dot are the registry's temporary files).
 */
#define VR_GROUP_NAME_MAX 64

/* 1 if c may appear in a group name, else 0. */
int vr_group_name_char(int c);

/* Returns 0 for a valid group name, or -EINVAL with the one message every
 * part of vramctl gives for a bad one in err (when err is not NULL). */
int vr_group_name_check(const char *name, char *err, size_t errlen);

/* The run's private record directory (vramctl run --report/--trace): each
 * member writes its numbers there (common/record.h, docs/report.md). */
#define VR_ENV_RECORD_DIR "VRAMCTL_RECORD_DIR"
/* What to record, comma-separated: report, trace, stacks. */
#define VR_ENV_RECORD "VRAMCTL_RECORD"

#endif /* VRAMCTL_CONTRACT_H */
