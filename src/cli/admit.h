/*
 * admit.h - a launcher's admission of its group's guarantees (admit.c):
 * `vramctl run --guarantee` has the group's guarantee given on
 * each device before the command starts, and held while it runs, or the
 * run is refused with the numbers. As root it writes the device book
 * itself (vr_devbook_admit, the one place that decides); as anyone else it
 * asks root's guard service (vramctl guard), which ties the guarantee to
 * this process.
 */
#ifndef VRAMCTL_CLI_ADMIT_H
#define VRAMCTL_CLI_ADMIT_H

#include "launch/launch.h"
#include "registry/registry.h"

struct cli_admit {
	int n;
	struct {
		unsigned char uuid[16];
		uint64_t ident;
		int direct; /* root wrote it: this process leaves it at the end */
	} dev[VR_MAX_DEVICES];
};

/*
 * For each device where gua gives a guarantee (lowered to lim's cap there):
 * the group's guarantee admitted, or joined (member: the launcher's
 * membership of the group, whose books' key names the group in the book).
 * One that does not fit has idle borrowers parked for it, asked
 * again every 250 ms for wait_ms (--wait; 0: once), then is asked once
 * more. 0, or -1 after one message (a guarantee that does not fit: the
 * numbers; no service: how to get it), with every guarantee given back.
 */
int cli_admit(const struct vr_limits *gua, const struct vr_limits *lim,
              const struct vr_launch_dev *devs, int ndev, const char *group, vr_member *member,
              uint64_t wait_ms, struct cli_admit *out);
/* NVML's free memory of the device with this UUID text (arg): 0, or -EIO
 * (vr_devbook_ask.card_free, for admission and `vramctl limit`). */
int cli_admit_card_free(void *arg, uint64_t *free_b);
/* Gives back what this process holds (a guarantee ends with the last of
 * the processes it lives for). */
void cli_admit_release(struct cli_admit *a);

#endif /* VRAMCTL_CLI_ADMIT_H */
