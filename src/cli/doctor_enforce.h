/*
 * doctor_enforce.h - `vramctl doctor`'s "enforcers" checks: which of
 * vramctl's two enforcers this machine has (docs/usage.md, "Two
 * enforcers"): the injected library (every driver) and the NVIDIA driver's
 * own per-cgroup memory limits (R615 and later, cgroup v2, not MIG), and
 * what to do to get the driver's.
 */
#ifndef VRAMCTL_CLI_DOCTOR_ENFORCE_H
#define VRAMCTL_CLI_DOCTOR_ENFORCE_H

#include "cli/doctor_hook.h"

/* Adds "enforce.library", "enforce.driver" and, per MIG GPU,
 * "enforce.driver" for that device. Needs check_nvml and the devices. */
void dr_check_enforcers(struct doc *d);

#endif /* VRAMCTL_CLI_DOCTOR_ENFORCE_H */
