/*
 * test_cgroup_id - container IDs and pod UIDs from /proc/PID/cgroup, on a
 * table of the path shapes runtimes and kubelet's two cgroup drivers make
 * (cgroup v1 and v2), the runtimes' monitor scopes that are not containers,
 * paths that name none, and a runtime's shape where that runtime never puts
 * it (a user's own scopes and slices, made with systemd-run --user or in a
 * delegated subtree): not a container.
 */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "monitor/cgroup_id.h"

#define ID   "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
#define ID2  "34dc0b5e626f2c5c4c5170e34b10e7654ce36f0fcd532739f4445baabea03376"
#define UID  "74c13223-5a00-11e9-b385-42010a80018d"
#define UID_ "74c13223_5a00_11e9_b385_42010a80018d"

static const struct {
	const char *what, *text, *id, *pod;
} cases[] = {
    /* Kubernetes, kubelet's cgroupfs driver (containerd, CRI-O, dockershim), v1. */
    {"cgroupfs v1 burstable",
     "12:memory:/kubepods/burstable/pod" UID "/" ID "\n11:devices:/kubepods/burstable/pod" UID
     "/" ID "\n1:name=systemd:/kubepods/burstable/pod" UID "/" ID "\n",
     ID, UID},
    {"cgroupfs v1 besteffort", "7:cpu,cpuacct:/kubepods/besteffort/pod" UID "/" ID2 "\n", ID2, UID},
    {"cgroupfs guaranteed (k3s)", "0::/kubepods/pod" UID "/" ID "\n", ID, UID},
    /* kubelet's systemd driver, cgroup v2: containerd, CRI-O, docker. */
    {"systemd v2 containerd",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
     ".slice/cri-containerd-" ID ".scope\n",
     ID, UID},
    {"systemd v2 crio guaranteed",
     "0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope\n", ID, UID},
    {"systemd v1 docker",
     "9:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
     ".slice/docker-" ID ".scope\n",
     ID, UID},
    /* CRI-O's conmon scope: the pod, not a container. */
    {"crio conmon", "0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope\n", "",
     UID},
    /* kind (a kubelet with cgroup root /kubelet), and a reader in its own
     * cgroup namespace (paths relative to its own cgroup). */
    {"kind",
     "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
     "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope\n",
     ID, UID},
    {"relative to a cgroup namespace",
     "0::/../../kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope\n", ID, UID},
    /* docker and podman outside Kubernetes. */
    {"docker cgroupfs v1", "4:memory:/docker/" ID "\n2:cpu:/docker/" ID "\n", ID, ""},
    {"docker systemd", "0::/system.slice/docker-" ID ".scope\n", ID, ""},
    {"podman rootful v2", "0::/machine.slice/libpod-" ID ".scope/container\n", ID, ""},
    {"podman rootless",
     "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope\n", ID, ""},
    {"docker rootless",
     "0::/user.slice/user-1001.slice/user@1001.service/user.slice/docker-" ID ".scope\n", ID, ""},
    {"podman cgroupfs", "0::/libpod_parent/libpod-" ID "\n", ID, ""},
    /* A podman pod's container: in the pod's cgroup (cgroupfs, systemd,
     * rootless); the pod's own ID is not a container's. */
    {"podman pod cgroupfs", "0::/libpod_parent/" ID2 "/libpod-" ID "\n", ID, ""},
    {"podman pod systemd",
     "0::/machine.slice/machine-libpod_pod_" ID2 ".slice/libpod-" ID ".scope\n", ID, ""},
    {"podman pod rootless",
     "0::/user.slice/user-1000.slice/user@1000.service/user.slice/user-libpod_pod_" ID2
     ".slice/libpod-" ID ".scope\n",
     ID, ""},
    {"podman pod's own cgroup", "0::/libpod_parent/" ID2 "\n", "", ""},
    {"podman conmon", "0::/machine.slice/libpod-conmon-" ID ".scope\n", "", ""},
    /* A container in a container: the inner one is the process's. */
    {"nested", "0::/system.slice/docker-" ID2 ".scope/docker/" ID "\n", ID, ""},
    /* v1 lines disagree (one controller left at the root): the first that
     * names a container wins. */
    {"v1 mixed", "9:name=systemd:/\n4:memory:/docker/" ID "\n0::/\n", ID, ""},
    /* Not containers. */
    {"host session", "0::/user.slice/user-1000.slice/session-3.scope\n", "", ""},
    {"root", "0::/\n", "", ""},
    {"32 hex digits", "4:memory:/process_api/3a28731e16b6cb1f839fe9afd9ac35a4\n", "", ""},
    {"63 hex digits", "0::/docker/" ID "x\n", "", ""},
    {"upper case", "0::/docker/9EC39B91F3D70E1BEFF50A308F77067065EA6BE0D91A3378375056CD4422CF3D\n",
     "", ""},
    {"a word before the id", "0::/system.slice/notanid" ID ".scope\n", "", ""},
    /* A malformed pod directory is not kubelet's: nothing below it is placed. */
    {"pod UID malformed",
     "0::/kubepods/burstable/pod74c13223-5a00-11e9-b385-42010a80018dz/" ID "\n", "", ""},
    {"pod slice outside kubepods", "0::/system.slice/foo-pod" UID_ ".slice\n", "", ""},
    /* A runtime's shape where no runtime puts it: a user's own scope in
     * their systemd manager (systemd-run --user --unit docker-<id>), a
     * delegated subtree imitating kubelet's, a service's own children. */
    {"user's own docker scope",
     "0::/user.slice/user-1001.slice/user@1001.service/docker-" ID ".scope\n", "", ""},
    {"user's own scope in app.slice",
     "0::/user.slice/user-1001.slice/user@1001.service/app.slice/libpod-" ID ".scope\n", "", ""},
    {"user's own kubepods",
     "0::/user.slice/user-1001.slice/user@1001.service/kubepods.slice/kubepods-pod" UID_
     ".slice/cri-containerd-" ID ".scope\n",
     "", ""},
    {"user's own cgroupfs docker",
     "0::/user.slice/user-1001.slice/user@1001.service/docker/" ID "\n", "", ""},
    {"rootless under another user's manager",
     "0::/user.slice/user-1000.slice/user@1001.service/user.slice/libpod-" ID ".scope\n", "", ""},
    {"a delegated service's child", "0::/system.slice/app.service/docker-" ID ".scope\n", "", ""},
    {"docker scope at the root", "0::/docker-" ID ".scope\n", "", ""},
    {"crio scope outside a pod", "0::/system.slice/crio-" ID ".scope\n", "", ""},
    {"a pod slice in a wrong QoS",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" ID
     ".scope\n",
     "", ""},
    /* Inside a container its runtime's placements count from its cgroup:
     * kind's node is a docker container; a user's scope inside it is not. */
    {"kind node in docker",
     "0::/system.slice/docker-" ID2 ".scope/kubelet.slice/kubelet-kubepods.slice/"
     "kubelet-kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope\n",
     ID, UID},
    {"user's scope inside a container",
     "0::/machine.slice/libpod-" ID2 ".scope/container/user.slice/user-0.slice/"
     "user@0.service/docker-" ID ".scope\n",
     ID2, ""},
    /* Seen from below a cgroup namespace root, the first level shown. */
    {"relative docker", "0::/../docker-" ID ".scope\n", ID, ""},
    {"relative cgroupfs pod", "0::/../pod" UID "/" ID "\n", ID, UID},
    {"relative guaranteed pod",
     "0::/../../kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope\n", ID, UID},
    {"relative user's scope",
     "0::/../../user.slice/user-1001.slice/user@1001.service/docker-" ID ".scope\n", "", ""},
    {"no newline at the end", "0::/docker/" ID, ID, ""},
    {"empty", "", "", ""},
    {"garbage", "::::\n\n:\n/docker/" ID "\n", "", ""},
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mon_cgroup_id id;
		int f = mon_cgroup_id_parse(cases[i].text, &id);
		if (strcmp(id.container_id, cases[i].id) || strcmp(id.pod_uid, cases[i].pod)) {
			fprintf(stderr, "%s: got id \"%s\" pod \"%s\", want \"%s\" \"%s\"\n",
			        cases[i].what, id.container_id, id.pod_uid, cases[i].id,
			        cases[i].pod);
			return 1;
		}
		ASSERT_EQ(f, (cases[i].id[0] ? 1 : 0) | (cases[i].pod[0] ? 2 : 0));
	}
	printf("%zu cgroup shapes parsed\n", sizeof(cases) / sizeof(cases[0]));
	return 0;
}
