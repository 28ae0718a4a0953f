/*
 * contract.h - the environment contract between whoever launches a program
 * under vramctl (the CLI, the Slurm plugin, a Kubernetes spec, a user) and
 * the injected library. The library reads these once, at its first use; the
 * README and vramctl(1) document each one. Nothing else configures policy.
 */
#ifndef VRAMCTL_CONTRACT_H
#define VRAMCTL_CONTRACT_H

/* Cap spec (size.h grammar). Unset: no cap, the library is invisible. */
#define VR_ENV_LIMIT "VRAMCTL_LIMIT"
/* "1": frameworks that preallocate grow on demand instead. */
#define VR_ENV_GROWTH "VRAMCTL_GROWTH"
/* Group name: processes with the same name share one cap per device. */
#define VR_ENV_GROUP "VRAMCTL_GROUP"
/* Registry directory (default $XDG_RUNTIME_DIR/vramctl or /tmp/vramctl-UID). */
#define VR_ENV_REGISTRY_DIR "VRAMCTL_REGISTRY_DIR"
/* Path of the real driver library; default: found as the loader would. */
#define VR_ENV_DRIVER "VRAMCTL_DRIVER"
/* Path of the real NVML library; default: libnvidia-ml.so.1. */
#define VR_ENV_NVML "VRAMCTL_NVML"
/* Messages: "quiet", "error", "warn" (default), "info", "debug". */
#define VR_ENV_LOG "VRAMCTL_LOG"

#endif /* VRAMCTL_CONTRACT_H */
