/*
 * run_enforce.h - `vramctl run --enforce driver|both`: the command runs in
 * a cgroup of its own with the NVIDIA driver's memory limit (R615) set
 * through NVML (run_enforce.c).
 */
#ifndef VRAMCTL_CLI_RUN_ENFORCE_H
#define VRAMCTL_CLI_RUN_ENFORCE_H

#include <limits.h>

#include "common/cgroup2.h"
#include "common/size.h"
#include "launch/launch.h"

struct mon_nvml;

/* The run's cgroup and the limits set in it. */
struct run_drv {
	char home[PATH_MAX];           /* the cgroup this process came from */
	char dir[PATH_MAX];            /* the command's cgroup */
	char ns[VR_CGROUP2_LEN + 64];  /* NVML's name of it */
	char uuid[VR_MAX_DEVICES][48]; /* the GPUs whose limit is set */
	int n;
	struct mon_nvml *nv;
};

/*
 * Makes the command's cgroup (a new child of this process's cgroup v2,
 * a leaf: the "no internal processes" rule holds), sets the driver's hard
 * limit on each capped device of devs (ndev of them) to its cap from lim
 * and the soft limit to its guarantee from gua (NULL or none there: 0; at
 * most the cap), and moves this process into it, so that the command started
 * next is born there. Returns 0, or VR_EXIT_ERROR after one line that says
 * why (cgroup v2 absent, no permission: not root or the cgroup not
 * delegated, a driver before R615, MIG); nothing is left behind then.
 */
int run_drv_enter(struct run_drv *rd, const struct vr_limits *lim, const struct vr_limits *gua,
                  const struct vr_launch_dev *devs, int ndev);

/*
 * After the command: moves this process back, clears the limits (soft
 * first, then hard, as NVIDIA asks) and removes the cgroup. Processes of
 * the command still in it keep the cgroup and its limits (said).
 */
void run_drv_leave(struct run_drv *rd);

#endif /* VRAMCTL_CLI_RUN_ENFORCE_H */
