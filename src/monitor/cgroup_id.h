/*
 * cgroup_id.h - a process's container ID and Kubernetes pod UID, read from
 * the text of /proc/PID/cgroup. Pure string work, libc only: the caller
 * reads the file (through the registry's /proc layer) and passes its text.
 *
 * The shapes recognised, cgroup v1 and v2, cgroupfs and systemd drivers
 * (tests/monitor/test_cgroup_id holds one real path of each), each only
 * where its runtime puts it, counted from the hierarchy's root or from a
 * container's own cgroup (a runtime inside a container, kind's node):
 *   /docker/<id>                                   docker, cgroupfs
 *   /system.slice/docker-<id>.scope                docker, systemd
 *   /machine.slice/libpod-<id>.scope[/container]   podman
 *   /libpod_parent/libpod-<id>                     podman, cgroupfs
 *   /libpod_parent/<pod>/libpod-<id>,
 *   /machine.slice/machine-libpod_pod_<pod>.slice/libpod-<id>.scope
 *                                                  a podman pod's container
 *   /user.slice/user-<u>.slice/user@<u>.service/user.slice/
 *       [user-libpod_pod_<pod>.slice/]libpod-<id>.scope | docker-<id>.scope
 *                                                  rootless podman, docker
 *   /kubepods/burstable/pod<uid>/<id>              kubelet cgroupfs (containerd, CRI-O, docker)
 *   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/
 *       cri-containerd-<id>.scope | crio-<id>.scope | docker-<id>.scope
 * where <id> is 64 hexadecimal digits and <uid_> is the pod UID with '-'
 * written '_' (the systemd driver's escaping; it is given back with '-').
 * The same shape anywhere else names nothing: a user can make any scope in
 * their own systemd manager (`systemd-run --user --unit docker-<id>`) or
 * cgroup in a delegated subtree, and what they make is not a runtime's.
 * "conmon" scopes (libpod-conmon-<id>, crio-conmon-<id>) are the runtime's
 * monitor process, not the container: never taken as its ID. A path that
 * begins with ".." (a reader in its own cgroup namespace sees paths
 * relative to its root) hides what is above: there the runtime's name at
 * the first level shown is taken (docker-, libpod-, cri-containerd-, crio-
 * scopes, a bare ID, kubelet's QoS or pod level).
 */
#ifndef VRAMCTL_MONITOR_CGROUP_ID_H
#define VRAMCTL_MONITOR_CGROUP_ID_H

#define MON_CONTAINER_ID_LEN 64
#define MON_POD_UID_LEN      36

struct mon_cgroup_id {
	char container_id[MON_CONTAINER_ID_LEN + 1]; /* "" when none was found */
	char pod_uid[MON_POD_UID_LEN + 1];           /* "" when none was found */
};

/*
 * Parses text (the whole of /proc/PID/cgroup, NUL-terminated) into out,
 * which it always fills ("" for what it did not find). The first line that
 * names a container gives its ID (the lines of one process name the same
 * container); the pod UID comes from that line, else from the first line
 * that has one. Returns a bit set: 1 a container ID was found, 2 a pod UID.
 */
int mon_cgroup_id_parse(const char *text, struct mon_cgroup_id *out);

#endif /* VRAMCTL_MONITOR_CGROUP_ID_H */
