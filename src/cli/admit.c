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
#include "common/parkwire.h"
#include "common/size.h"
#include "common/text.h"
#include "monitor/model.h"
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

/* The host PIDs NVML lists on the GPU with UUID text arg. */
static int list_on(void *arg, int *pids, int max)
{
	struct mon_nvml *nv = NULL;
	struct mon_model m;
	char err[256];
	memset(&m, 0, sizeof m);
	if (mon_nvml_open(NULL, &nv, err, sizeof err) != 0 || mon_nvml_read(nv, &m) != 0) {
		if (nv)
			mon_nvml_close(nv);
		return -EIO;
	}
	int k = 0;
	for (int i = 0; i < m.nprocs && k < max; i++)
		if ((m.procs[i].valid & (MON_P_NVML | MON_P_HOST_PID)) ==
		        (MON_P_NVML | MON_P_HOST_PID) &&
		    !strcmp(m.procs[i].uuid, arg))
			pids[k++] = (int)m.procs[i].host_pid;
	mon_model_clear(&m);
	mon_nvml_close(nv);
	return k;
}

static void said_parked(void *arg, int pid, long long idle_ms, uint64_t bytes)
{
	char b[32];
	fprintf(stderr, "vramctl: --guarantee: %s: process %d (idle %lld ms) parked for it (%s)\n",
	        (const char *)arg, pid, idle_ms, vr_format_size(bytes, b, sizeof b));
}

/* The guarantee of g on dv admitted (root: directly; else by the guard
 * service). 0, or a negative errno with err (the service's refusals are
 * -EACCES). */
static int admit_any(const struct vr_launch_dev *dv, uint64_t g, uint64_t ident, const char *group,
                     int direct, uint64_t *given, char *err, size_t errlen)
{
	if (direct)
		return admit_direct(dv, g, ident, group, given, err, errlen);
	struct vr_guard_req r = {.verb = VR_GUARD_ADMIT, .bytes = g, .ident = ident};
	memcpy(r.uuid, dv->raw, 16);
	vr_text_copy(r.group, sizeof r.group, group);
	return vr_guard_ask(&r, given, err, errlen);
}

static int admit_one(const struct vr_launch_dev *dv, uint64_t g, const char *group,
                     vr_member *member, uint64_t wait_ms, struct cli_admit *out)
{
	char err[512] = "";
	uint64_t given = 0, ident = vr_devbook_ident(vr_group_key(member)), free_b = 0;
	int direct = geteuid() == 0 && vr_devbook_host_pids();
	int rc = admit_any(dv, g, ident, group, direct, &given, err, sizeof err);
	/* No room for it now: idle borrowers that can be parked are parked
	 * for it, then it is asked once more (the book's refusal for
	 * room; the service's only while the card itself lacks the room). */
	if ((rc == -ENOSPC || rc == -EACCES) && g <= dv->total &&
	    cli_admit_card_free((void *)dv->uuid, &free_b) == 0 && (rc == -ENOSPC || free_b < g)) {
		struct vr_park_for p = {.uuid = dv->uuid,
		                        .bytes = free_b < g ? g - free_b : g,
		                        .wait_ms = wait_ms,
		                        .self = (int)getpid(),
		                        .list = list_on,
		                        .parked = said_parked,
		                        .arg = (void *)dv->uuid};
		if (vr_park_for_guarantee(&p) > 0)
			rc = admit_any(dv, g, ident, group, direct, &given, err, sizeof err);
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
              uint64_t wait_ms, struct cli_admit *out)
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
		rc = admit_one(&devs[i], g, group, member, wait_ms, out);
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
