# doctor_enforce.sh - `vramctl doctor`'s enforcers on the simulated GPU put
# into each state: the driver's limits supported (R615, cgroup v2 with the
# dmem controller, and without it), an old driver, cgroup v1, a MIG GPU.
# The cgroup root is a fake directory (VRAMCTL_CGROUP_ROOT).
. "$VR_SRC/tests/cli/common.bash"
. "$VR_SRC/tests/monitor/lib.bash"
sim_only || { echo "SKIP: needs the simulator's controls"; exit 77; }
require_sim
unset VRAMSIM_DEVICES VRAMSIM_MIG VRAMSIM_KERNEL_RELEASE VRAMSIM_DRIVER_RELEASE \
	VRAMCTL_DRIVER VRAMCTL_NVML CUDA_VISIBLE_DEVICES
: >preload-none
export VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-none
kernel() {
	printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Fri Aug  1 00:00:00 UTC 2025\n' "$1" >"kernel-$1"
	export VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE=$PWD/kernel-$1
}
doctor() {
	"$V" doctor "$@" >out 2>err
	rc=$?
}
# line STATUS ID TEXT WHAT: out has a line "STATUS ID ...TEXT..."
line() {
	grep -E "^$1 +$2 " out | grep -qF -- "$3" ||
		{ fail "$4: no '$1 $2 ... $3' line:"; sed 's/^/      /' out >&2; }
}
mkdir v2 v2-nodmem v1
echo "cpuset cpu io memory hugetlb pids rdma misc dmem" >v2/cgroup.controllers
printf 'drm/0000:3b:00.0/vram0 17179869184\nnvidia/0000:65:00.0/vram 85899345920\n' >v2/dmem.capacity
echo "cpuset cpu io memory pids" >v2-nodmem/cgroup.controllers

# An old driver (the simulator's default, 580): OK, the library holds.
kernel 580.82.07
VRAMCTL_CGROUP_ROOT=$PWD/v2 doctor
expect_rc 0 "$rc" "old driver"
line OK enforce.library "the injected library" "old driver: library"
line OK enforce.driver "not available with driver 580.82.07" "old driver"
line OK enforce.driver "R615 or later" "old driver: what to do"

kernel 615.20.01
export VRAMSIM_DRIVER_RELEASE=615.20.01
# Supported, with the dmem controller and its regions.
VRAMCTL_CGROUP_ROOT=$PWD/v2 doctor
expect_rc 0 "$rc" "supported"
line OK enforce.driver "available (driver 615.20.01" "supported"
line OK enforce.driver "the dmem controller (2 regions in dmem.capacity, 1 NVIDIA's)" "dmem"
# Supported, the driver's own backend.
VRAMCTL_CGROUP_ROOT=$PWD/v2-nodmem doctor
expect_rc 0 "$rc" "supported without dmem"
line OK enforce.driver "the driver's own backend (no dmem controller)" "no dmem"
# cgroup v1: the driver has them, the machine cannot use them.
VRAMCTL_CGROUP_ROOT=$PWD/v1 doctor
expect_rc 0 "$rc" "cgroup v1"
line WARN enforce.driver "is not a cgroup v2 hierarchy" "cgroup v1"
grep -qF "fix: boot with cgroup v2" out || fail "cgroup v1: fix"
# MIG: that GPU is excluded; with every GPU in MIG, nothing to ask.
VRAMSIM_MIG=1 VRAMCTL_CGROUP_ROOT=$PWD/v2 doctor
line OK enforce.driver "GPU 0: MIG mode is on: the driver's memory limits do not apply" "MIG"
line SKIP enforce.driver "no GPU outside MIG mode" "MIG only"
VRAMSIM_DEVICES=16G,16G VRAMSIM_MIG=1,0 VRAMCTL_CGROUP_ROOT=$PWD/v2 doctor
line OK enforce.driver "GPU 0: MIG mode is on" "MIG on GPU 0 of 2"
line OK enforce.driver "available (driver 615.20.01" "GPU 1 without MIG"
# --json carries them too.
VRAMCTL_CGROUP_ROOT=$PWD/v2 doctor --json
expect_grep '"id": "enforce.driver"' out "json"
finish
