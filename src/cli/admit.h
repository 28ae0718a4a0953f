/*
 * admit.h - a launcher's admission of its group's guarantees (admit.c,
 * #26): `vramctl run --guarantee` takes a line in each device's book for
 * the whole run, so the group's guarantee is given before the command
 * starts and held while it runs, or the run is refused with the numbers.
 */
#ifndef VRAMCTL_CLI_ADMIT_H
#define VRAMCTL_CLI_ADMIT_H

#include "launch/launch.h"
#include "registry/registry.h"

struct vr_devbook;
struct vr_devbook_proc;
struct mon_model;

/* NVML's processes on the device with this UUID text (what the card holds
 * for each, for admission: registry/devbook.h), malloc'ed; NULL with *n -1
 * when the model has no NVML figures. */
struct vr_devbook_proc *cli_admit_procs(const struct mon_model *m, const char *uuid, int *n);

struct cli_admit {
	int n;
	struct vr_devbook *book[VR_MAX_DEVICES];
};

/*
 * For each device where gua gives a guarantee (lowered to lim's cap there):
 * the device's book, this process's line in it, and the group's entry with
 * the guarantee (member: the launcher's membership of the group, whose
 * books' key tells the group apart). 0, or -1 after one message (a
 * guarantee that does not fit: the numbers), with every line given back.
 */
int cli_admit(const struct vr_limits *gua, const struct vr_limits *lim,
              const struct vr_launch_dev *devs, int ndev, const char *group, vr_member *member,
              struct cli_admit *out);
/* Gives the lines back (the group's guarantee goes with its last member). */
void cli_admit_release(struct cli_admit *a);

#endif /* VRAMCTL_CLI_ADMIT_H */
