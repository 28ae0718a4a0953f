/*
 * policy.h - "does this fit?" (policy.c): the cap of each device, reserve
 * or deny before the driver is called, and the numbers every memory query
 * shows the program. The wrappers ask here and nowhere else.
 */
#ifndef VRAMCTL_HOOK_POLICY_H
#define VRAMCTL_HOOK_POLICY_H

#include "hook/devices.h"

/* Checks that every device the cap names is one of this process's (or a
 * GPU of this machine hidden by CUDA_VISIBLE_DEVICES); if one is not, says
 * so once and every device's cap becomes 0 (fail closed). Idempotent; called
 * before the devices lock is taken (it may load NVML). */
void vr_policy_check_devices(void);

/* Called once per device as it is set up (devices.c): the cap asked for it,
 * then the books (the group's cap, if it has one, wins). */
void vr_policy_device(struct vr_dev *d);

/*
 * Reserve before the driver is called, release when it fails or the memory
 * is freed. vr_policy_reserve returns 0, or -1 when the request does not fit
 * (the denial has been reported); vr_policy_try is the same without the
 * report (settling pools). Uncapped devices are counted and never denied.
 * A NULL device reserves and releases nothing.
 */
int vr_policy_reserve(struct vr_dev *d, uint64_t bytes);
int vr_policy_try(struct vr_dev *d, uint64_t bytes);
void vr_policy_release(struct vr_dev *d, uint64_t bytes);

/*
 * For an allocation that may spill past the cap (spill.h, docs/spill.md):
 * 0 reserved on the device; 1 the device is at its cap and spill is on:
 * nothing reserved, nothing said, the caller serves it from the host; -1
 * denied (said). The device is always tried first, so allocations go to it
 * again as soon as it has room.
 */
int vr_policy_reserve_spillable(struct vr_dev *d, uint64_t bytes);
/* The denial when spill could not serve the request either: counted in the
 * books and said, with why (rate limited like every denial). */
void vr_policy_deny(struct vr_dev *d, uint64_t bytes, const char *why);

/* What the program is shown for a capped device, from the driver's (free,
 * total): total = min(cap, total); free = min(cap - group in-use, free),
 * never below zero, never above total. */
void vr_policy_view(struct vr_dev *d, uint64_t *freep, uint64_t *totalp);
/* 1 when spill is built in but not switched on (the denial's hint then
 * suggests it). A weak default answers 0; the spill engine defines it. */
int vr_spill_available(void);
/* The total shown for d, from the driver's physical total. */
uint64_t vr_policy_total(const struct vr_dev *d, uint64_t total);

#endif /* VRAMCTL_HOOK_POLICY_H */
