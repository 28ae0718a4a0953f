/*
 * identity.h - who a process is on a node: its container ID and pod UID
 * (from /proc/PID/cgroup, mon_cgroup_id_parse) and the pod name, namespace
 * and container name its launcher wrote into its environment.
 *
 * The names are read from /proc/PID/environ (the environment the process
 * was started with; readable by its own user, or with CAP_SYS_PTRACE):
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

#define MON_ENV_POD_NAME       "VRAMCTL_POD_NAME"
#define MON_ENV_POD_NAMESPACE  "VRAMCTL_POD_NAMESPACE"
#define MON_ENV_CONTAINER_NAME "VRAMCTL_CONTAINER_NAME"

/*
 * Fills the identity of each row of a live process with a host PID (capped
 * and alive, or uncapped), reading proc_root/PID/cgroup and environ once per
 * process. Rows whose files cannot be read keep "" (unknown); a row with
 * something read gets MON_P_IDENTITY. Never fails: a buffer that cannot be
 * allocated leaves every identity unknown.
 */
void mon_identity_fill(struct mon_model *m, const char *proc_root);

#endif /* VRAMCTL_MONITOR_IDENTITY_H */
