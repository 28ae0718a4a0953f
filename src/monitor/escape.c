/*
 * escape.c - processes of a capped job outside its cap (escape.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "monitor/escape.h"
#include "registry/jobs.h"

/* The cap of group `name` on the GPU with this UUID, as m has it. */
static uint64_t group_cap(const struct mon_model *m, const char *name, const char *uuid)
{
	for (int i = 0; i < m->ngroups; i++) {
		if (strcmp(m->groups[i].name, name) != 0)
			continue;
		for (int d = 0; d < m->groups[i].ndev; d++)
			if (!strcasecmp(m->groups[i].dev[d].uuid, uuid))
				return m->groups[i].dev[d].cap;
	}
	return MON_NO_CAP;
}

void mon_escape_mark(struct mon_model *m, const char *proc_root, const char *jobs_dir)
{
	struct vr_job jobs[VR_JOBS_MAX];
	for (int i = 0; i < m->nprocs; i++) {
		struct mon_proc *p = &m->procs[i];
		if ((p->valid & MON_P_CAPPED) || !(p->valid & MON_P_HOST_PID) || p->host_pid <= 0)
			continue;
		if (vr_jobs_of(jobs_dir, proc_root, NULL, p->host_pid, jobs, VR_JOBS_MAX) <= 0)
			continue;
		p->valid |= MON_P_ESCAPED;
		snprintf(p->group, sizeof p->group, "%s", jobs[0].group);
		p->cap = group_cap(m, p->group, p->uuid);
	}
}
