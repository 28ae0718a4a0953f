/*
 * guarantee_park.c - what parking asks of the guarantees
 * (guarantee_park.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/parkwire.h"
#include "common/size.h"
#include "hook/books.h"
#include "hook/config.h"
#include "hook/guarantee_park.h"
#include "hook/log.h"
#include "hook/nvmlproc.h"
#include "registry/devbook.h"

int vr_gt_owed(struct vr_dev *d)
{
	return d->gt.guarantee && vr_books_in_use(d) <= d->gt.guarantee;
}

int vr_gt_borrowing(struct vr_dev *d)
{
	return !d->gt.guarantee || vr_books_in_use(d) > d->gt.guarantee;
}

int vr_gt_owed_to_uid(const struct vr_dev *d, uint32_t uid)
{
	struct vr_devbook_view *v = malloc(sizeof *v);
	int owed = 0;
	if (v && vr_devbook_read(NULL, d->uuid, v) == 0)
		for (int i = 0; i < v->n && !owed; i++)
			owed =
			    v->e[i].live && v->e[i].uid == uid && v->e[i].held < v->e[i].guarantee;
	free(v);
	return owed;
}

/* ---- the guaranteed group's side ------------------------------------- */

/* NVML's host PIDs on d's GPU. */
static int list_on(void *arg, int *pids, int max)
{
	const struct vr_dev *d = arg;
	struct vr_nvml_proc *l = NULL;
	unsigned n = 0;
	nvmlReturn_t nrc;
	if (vr_nvml_list(d->uuid_text, &l, &n, &nrc) != NV_READY)
		return -EIO;
	int k = 0;
	for (unsigned i = 0; i < n && k < max; i++)
		pids[k++] = (int)l[i].pid;
	free(l);
	return k;
}

static void said_parked(void *arg, int pid, long long idle_ms, uint64_t bytes)
{
	const struct vr_dev *d = arg;
	char b[32];
	vr_log(VR_LOG_INFO,
	       "GPU %d: process %d (idle %lld ms) parked for this group's guarantee (%s)",
	       d->ordinal, pid, idle_ms, vr_format_size(bytes, b, sizeof b));
}

int vr_gt_park_borrowers(struct vr_dev *d, uint64_t bytes)
{
	struct vr_park_for r = {.uuid = d->uuid_text,
	                        .bytes = bytes,
	                        .wait_ms = vr_g.wait_ms,
	                        .self = (int)vr_nvml_host_pid(NULL),
	                        .list = list_on,
	                        .parked = said_parked,
	                        .arg = d};
	return vr_park_for_guarantee(&r) > 0;
}
