/*
 * admit.c - a launcher's admission of its group's guarantees (admit.h).
 * The card's capacity and free memory are NVML's; the rule is the
 * registry's (vr_devbook_admit), here or in the guard service.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/admit.h"
#include "common/size.h"
#include "common/text.h"
#include "monitor/nvml.h"
#include "registry/devbook.h"
#include "registry/devguard.h"
#include "registry/proc.h"

int cli_admit_card_free(void *arg, uint64_t *free_b)
{
	struct mon_nvml *nv = NULL;
	char err[256];
	uint64_t usable;
	int rc = mon_nvml_open(NULL, &nv, err, sizeof err) == 0
	             ? mon_nvml_card(nv, arg, -1, NULL, free_b, &usable)
	             : -EIO;
	if (nv)
		mon_nvml_close(nv);
	return rc == 0 ? 0 : -EIO;
}

/* Root: the book itself. */
static int admit_direct(const struct vr_launch_dev *dv, uint64_t g, uint64_t ident,
                        const char *group, uint64_t *given, char *err, size_t errlen)
{
	struct vr_devbook_ask a = {.capacity = dv->total, /* the driver's */
	                           .uid = (uint32_t)getuid(),
	                           .ident = ident,
	                           .guarantee = g,
	                           .group = group,
	                           .holder = {.pid = (int32_t)getpid()},
	                           .card_free = cli_admit_card_free,
	                           .arg = (void *)dv->uuid};
	if (vr_proc_start_time(NULL, 0, &a.holder.start) != 0)
		a.holder.start = 0;
	int rc = vr_devbook_admit(NULL, dv->raw, &a, given, err, errlen);
	return rc < 0 ? rc : 0;
}

static int admit_one(const struct vr_launch_dev *dv, uint64_t g, const char *group,
                     vr_member *member, struct cli_admit *out)
{
	char err[512] = "";
	uint64_t given = 0, ident = vr_devbook_ident(vr_group_key(member));
	int direct = geteuid() == 0 && vr_devbook_host_pids(), rc;
	if (direct) {
		rc = admit_direct(dv, g, ident, group, &given, err, sizeof err);
	} else {
		struct vr_guard_req r = {.verb = VR_GUARD_ADMIT, .bytes = g, .ident = ident};
		memcpy(r.uuid, dv->raw, 16);
		vr_text_copy(r.group, sizeof r.group, group);
		rc = vr_guard_ask(&r, &given, err, sizeof err);
	}
	if (rc < 0) {
		fprintf(stderr, "vramctl: --guarantee: GPU %d (%s): %s; nothing started\n",
		        dv->index, dv->uuid, err[0] ? err : strerror(-rc));
		return -1;
	}
	int k = out->n++;
	memcpy(out->dev[k].uuid, dv->raw, 16);
	out->dev[k].ident = ident;
	out->dev[k].direct = direct;
	if (given != g) {
		char a[32], b[32];
		fprintf(
		    stderr,
		    "vramctl: --guarantee: GPU %d: group %s already holds a guarantee of %s there "
		    "(its first member's); it stays, not %s\n",
		    dv->index, group, vr_format_size(given, a, sizeof a),
		    vr_format_size(g, b, sizeof b));
	}
	return 0;
}

int cli_admit(const struct vr_limits *gua, const struct vr_limits *lim,
              const struct vr_launch_dev *devs, int ndev, const char *group, vr_member *member,
              struct cli_admit *out)
{
	memset(out, 0, sizeof *out);
	int rc = 0;
	for (int i = 0; i < ndev && rc == 0; i++) {
		uint64_t g, cap;
		if (!vr_limits_cap_for(gua, devs[i].index, devs[i].uuid, devs[i].total, &g) || !g)
			continue;
		if (vr_limits_cap_for(lim, devs[i].index, devs[i].uuid, devs[i].total, &cap) &&
		    g > cap)
			g = cap;
		rc = admit_one(&devs[i], g, group, member, out);
	}
	if (rc != 0)
		cli_admit_release(out);
	return rc;
}

void cli_admit_release(struct cli_admit *a)
{
	/* What the service holds for this process ends with it. */
	for (int i = 0; i < a->n; i++)
		if (a->dev[i].direct)
			vr_devbook_leave(NULL, a->dev[i].uuid, (uint32_t)getuid(), a->dev[i].ident,
			                 (int32_t)getpid());
	a->n = 0;
}
