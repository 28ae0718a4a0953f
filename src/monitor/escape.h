/*
 * escape.h - processes of a capped job that run outside its cap
 * (escape.c): NVML lists them on a GPU, they are in no group's books, and
 * the job's record (registry/jobs.h) says they are the job's (its process
 * tree, its cgroup). `vramctl run`'s watcher charges them to the job's
 * group (cli/run_job.h); every view lists them under it, as `escaped`.
 */
#ifndef VRAMCTL_MONITOR_ESCAPE_H
#define VRAMCTL_MONITOR_ESCAPE_H

#include "monitor/model.h"

/* Marks every uncapped process of m that a job's record claims: valid
 * gets MON_P_ESCAPED, group the job's group, cap the group's cap on the
 * process's GPU when m has the group (else MON_NO_CAP). proc_root: /proc
 * (NULL) or a fake one; jobs_dir: the jobs directory (NULL: the machine's). */
void mon_escape_mark(struct mon_model *m, const char *proc_root, const char *jobs_dir);

#endif /* VRAMCTL_MONITOR_ESCAPE_H */
