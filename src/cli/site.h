/*
 * site.h - what the CLI takes from the administrator's configuration file
 * (site.c, vramctl.conf(5)).
 */
#ifndef VRAMCTL_CLI_SITE_H
#define VRAMCTL_CLI_SITE_H

#include <stddef.h>

#include "launch/launch.h"

struct vr_limits;

/*
 * cli_site_check: 0, or -1 after a message saying the file is unusable and
 * `what` is refused. cli_site_default_spec: the cap for a run without
 * --limit (default_limit, else max_limit), or NULL.
 * cli_site_clamp: lowers the caps in lim (and its text, spec) to the
 * site's maximum on every device (a notice for each), rewriting both as
 * per-device UUID=amount items when one was lowered. 0, or -1.
 */
int cli_site_check(const char *what);
const char *cli_site_default_spec(void);
int cli_site_clamp(struct vr_limits *lim, const struct vr_launch_dev *devs, int ndev, char *spec,
                   size_t len);

#endif /* VRAMCTL_CLI_SITE_H */
