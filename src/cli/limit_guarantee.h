/*
 * limit_guarantee.h - `vramctl limit` and the group's guarantees
 * (limit_guarantee.c): a cap lowered below the group's guarantee on a
 * device lowers the guarantee with it (a guarantee above the cap is memory
 * held from every other group and usable by none), and `--guarantee SPEC`
 * changes a running group's guarantee, a raise only with admission.
 */
#ifndef VRAMCTL_CLI_LIMIT_GUARANTEE_H
#define VRAMCTL_CLI_LIMIT_GUARANTEE_H

#include "launch/launch.h"
#include "registry/caps.h"
#include "registry/registry.h"

/* What changed on each device, to say once the caps are set, or to take
 * back should they fail. */
struct cli_regrant {
	int n;
	struct {
		unsigned char uuid[VR_UUID_LEN];
		uint64_t old, now;
		int with_cap; /* lowered to a cap below it */
	} d[VR_MAX_DEVICES];
	const char *group;
	uint64_t ident; /* the group's name in the books (vr_devbook_ident) */
	uint32_t uid;
};

/*
 * The group's guarantee on each device of caps[0..n) (their caps as they
 * will be): set from gua where it names the device (NULL: not asked),
 * else kept; lowered to the cap where it is above it. A raise is admitted
 * against the device's book (the numbers when it does not fit); a device
 * gua names where the group holds no guarantee is refused. m: the group's
 * member (`vramctl limit` joins as a launcher), uid: the group's owner.
 * 0 with out filled, or -1 after one message with nothing changed.
 */
int cli_regrant(const char *group, vr_member *m, uint32_t uid, const struct vr_cap_new *caps, int n,
                const struct vr_limits *gua, const struct vr_launch_dev *devs, int ndev,
                struct cli_regrant *out);
/* Says each change on stdout ("group G: GPU-...: guarantee A -> B"). */
void cli_regrant_say(const struct cli_regrant *r);
/* Takes each change back (the caps could not be set). */
void cli_regrant_undo(const struct cli_regrant *r);

#endif /* VRAMCTL_CLI_LIMIT_GUARANTEE_H */
