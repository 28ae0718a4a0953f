/*
 * identity.h - who a process is on a node: its container ID and pod UID
 * (from /proc/PID/cgroup, mon_cgroup_id_parse) and the pod name, namespace
 * and container name its launcher wrote into its environment.
 *
 * The names are read from /proc/PID/environ (the environment the process
 * was started with; readable by its own user, or with CAP_SYS_PTRACE), or
 * for a member from what it recorded of its environment at its join:
 *   VRAMCTL_POD_NAME, VRAMCTL_POD_NAMESPACE   (a pod spec's downward API:
 *                                              metadata.name, metadata.namespace)
 *   VRAMCTL_CONTAINER_NAME                    (written literally in the
 *                                              container's env: the downward
 *                                              API has no field for it)
 * A value too long for its field (a Kubernetes name never is) or empty is
 * left unknown, never cut.
 */
#ifndef VRAMCTL_MONITOR_IDENTITY_H
#define VRAMCTL_MONITOR_IDENTITY_H

#include "monitor/model.h"

#define MON_ENV_POD_NAME       VR_ENV_POD_NAME
#define MON_ENV_POD_NAMESPACE  VR_ENV_POD_NAMESPACE
#define MON_ENV_CONTAINER_NAME VR_ENV_CONTAINER_NAME

/*
 * Fills the identity of each row of a live process with a host PID (capped
 * and alive, or uncapped), once per process: a member's from the record it
 * wrote at its join (s->procs[row.rec].ident: its names as recorded, its
 * cgroups once the kernel's cgroup.procs confirm them: cgcheck.h), anyone
 * else's (and cgroups not confirmed) from proc_root/PID/cgroup and environ.
 * proc_root/self gives the monitor's own cgroup mounts and namespace. Also
 * the cgroup v2 path (MON_P_CGROUP2), for the driver's limits. Rows whose
 * files cannot be read keep "" (unknown); a row with something read gets
 * MON_P_IDENTITY. s may be NULL. Never fails: a buffer that cannot be
 * allocated leaves every identity unknown.
 */
void mon_identity_fill(struct mon_model *m, const char *proc_root,
                       const struct vramctl_snapshot *s);

#endif /* VRAMCTL_MONITOR_IDENTITY_H */
