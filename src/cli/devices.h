/*
 * devices.h - the devices a command will see, as the driver reports them
 * (devices.c).
 */
#ifndef VRAMCTL_CLI_DEVICES_H
#define VRAMCTL_CLI_DEVICES_H

#include <stddef.h>

#include "launch/launch.h"

/*
 * Loads the driver ($VRAMCTL_DRIVER, else "libcuda.so.1" as the loader finds
 * it) and lists the visible devices. Returns the device count (>= 0), or -1
 * with a one-line reason in err when no driver can be loaded or initialised.
 * The driver stays loaded (vramctl only execs children afterwards).
 */
int cli_devices(struct vr_launch_dev *devs, int max, char *err, size_t errlen);

/* 1 when the driver cli_devices loaded is vramctl's simulator (sim/: it
 * exports vramsim_take, which no NVIDIA driver has), else 0. */
int cli_driver_is_sim(void);

#endif /* VRAMCTL_CLI_DEVICES_H */
