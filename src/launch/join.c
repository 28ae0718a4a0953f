/*
 * join.c - a launcher that stays a member of its group for the whole run
 * (`vramctl run`): joining, fixing the caps, and what applies when the group
 * already had other caps (see launch.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/spill.h"
#include "common/text.h"
#include "launch/launch.h"

/* Appends one line to the notes (dropped when they are full). */
static void note(struct vr_launch_group *g, const char *fmt, ...) VR_PRINTF(2, 3);

static void note(struct vr_launch_group *g, const char *fmt, ...)
{
	size_t used = strlen(g->notes);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(g->notes + used, sizeof(g->notes) - used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(g->notes) - used - 1)
		g->notes[used] = '\0';
	else
		strcat(g->notes, "\n");
}

/* A wait for a live member that passes a second, said as it happens (the
 * registry bounds all the waits of one call together). */
static void say_now(const char *line)
{
	fprintf(stderr, "vramctl: %s\n", line);
}

/*
 * The caps in force on the devices seen, as a spec ("GPU-...=1G,..."). Returns
 * 0, or -1 when there is no device, no capped one, or no room.
 */
static int caps_spec(const struct vr_launch_join *j, const struct vr_launch_group *g, int ndev,
                     char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < ndev; i++) {
		struct vr_limit amount = {.bytes = g->cap[i]};
		char a[32];
		int n;

		if (g->cap[i] == UINT64_MAX)
			continue;
		vr_format_amount(&amount, a, sizeof(a));
		n = snprintf(out + used, len - used, "%s%s=%s", used ? "," : "", j->devs[i].uuid,
		             a);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	return used ? 0 : -1;
}

int vr_launch_join(const struct vr_launch_join *j, struct vr_launch_group *g, char *err,
                   size_t errlen)
{
	/* The launcher holds the group open for its command and runs no GPU
	 * code: it is not counted among the group's members. */
	struct vr_join_opts o = {.dir = j->dir,
	                         .group = j->group,
	                         .limit_spec = j->spec,
	                         .growth = j->growth,
	                         .fresh = j->fresh,
	                         .launcher = 1,
	                         .spill_budget = j->spill,
	                         .park_budget = j->park_budget,
	                         .notice = say_now};
	int ndev = j->ndev < VR_MAX_DEVICES ? j->ndev : VR_MAX_DEVICES;
	char why[256];
	int rc;

	memset(g, 0, sizeof(*g));
	if (!j->dir && vr_launch_registry_env(err, errlen) < 0)
		return -1;
	if (strlen(j->spec) >= sizeof(g->spec)) {
		vr_seterr(err, errlen, "the spec is too long");
		return -1;
	}
	strcpy(g->spec, j->spec);
	rc = vr_join(&o, &g->member, &g->differs, why, sizeof(why));
	if (rc < 0) {
		vr_seterr(err, errlen, "cannot join group '%s': %s", j->group, why);
		return -1;
	}
	g->spill = vr_spill_budget(g->member);
	if (g->spill != j->spill) {
		char line[256];

		note(g, "vramctl: %s",
		     vr_spill_differs_note(line, sizeof(line), j->group, g->spill, j->spill));
	}
	/* Devices as the run numbers them; renumbered by CUDA_VISIBLE_DEVICES,
	 * with their UUIDs too (status and nvidia-smi number them otherwise). */
	int renumbered = getenv("CUDA_VISIBLE_DEVICES") != NULL;
	for (int i = 0; i < ndev; i++) {
		char a[32], b[32], gpu[80];
		vr_gpu_label(gpu, sizeof(gpu), i, j->devs[i].uuid, renumbered);

		if (!vr_limits_cap_for(j->limits, i, j->devs[i].uuid, j->devs[i].total,
		                       &g->asked[i]))
			g->asked[i] = UINT64_MAX;
		rc = vr_device(g->member, j->devs[i].raw, g->asked[i], &g->cap[i]);
		if (rc == -EPERM) {
			vr_seterr(err, errlen,
			          "group '%s' leaves %s uncapped and this run asks for a cap of "
			          "%s there: a cap asked for is never dropped (run it in another "
			          "group, or without a cap on GPU %d)",
			          j->group, gpu, vr_format_size(g->asked[i], a, sizeof(a)), i);
		} else if (rc < 0) {
			vr_seterr(err, errlen, "group '%s': cannot record device %d: %s", j->group,
			          i, strerror(-rc));
		}
		if (rc < 0) {
			vr_leave(g->member);
			g->member = NULL;
			return -1;
		}
		if (g->cap[i] != g->asked[i]) {
			g->differs = 1;
			note(g,
			     "vramctl: group '%s' already has a different cap on %s: %s, not "
			     "%s; the group's cap applies",
			     j->group, gpu,
			     g->cap[i] == UINT64_MAX ? "none"
			                             : vr_format_size(g->cap[i], a, sizeof(a)),
			     g->asked[i] == UINT64_MAX ? "none"
			                               : vr_format_size(g->asked[i], b, sizeof(b)));
		}
	}
	if (g->differs) {
		char theirs[sizeof(g->spec)];

		struct vr_limits parsed;

		/* Cut, or not a spec at all (damaged books): never handed on. */
		if (vr_group_spec(g->member, theirs, sizeof(theirs)) != 0 ||
		    (theirs[0] && vr_parse_limits(theirs, &parsed, NULL, 0) < 0))
			theirs[0] = '\0';
		if (!theirs[0] && caps_spec(j, g, ndev, theirs, sizeof(theirs)) == 0) {
			/* The group's text was too long for its region: the caps in
			 * force on the devices seen say the same for the children. */
			strcpy(g->spec, theirs);
		} else if (theirs[0]) {
			if (ndev <= 0)
				note(g,
				     "vramctl: group '%s' was created with the cap '%s', not '%s'; "
				     "the group's cap applies",
				     j->group, theirs, j->spec);
			strcpy(g->spec, theirs);
		} else if (ndev <= 0) {
			char line[sizeof(g->notes)];

			note(g, "vramctl: %s",
			     vr_cap_differs_note(line, sizeof(line), j->group, j->spec));
		}
	}
	return 0;
}
