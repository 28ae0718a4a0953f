#!/usr/bin/env bash
# tests/slurm/driver.sh - the SPANK plugin's enforce=driver|both in a real
# one-node Slurm (tests/slurm/lib.sh) on the simulated R615 driver: the
# step's cgroup gets the driver's hard limit (the job's cap) and soft limit
# (--gpu-mem-guarantee), a program in the step is refused by the simulated
# driver past the hard limit, and the limits are cleared (and the plugin's
# cgroup removed) when the step ends; a driver refusal is one line in the
# job's output and the library holds the cap. Slurm's test rig runs
# proctrack/linuxproc, so this is the plugin's own cgroup per step; Slurm's
# step cgroups (proctrack/cgroup) are covered by tests/slurm/test_policy.
# Needs root, Slurm and a writable cgroup v2 hierarchy; skips (77) without.
set -u
: "${VR_BUILD:?run through tests/run}" "${VR_SRC:?run through tests/run}"
. "$VR_SRC/tests/slurm/lib.sh" # skip, fail, the cluster
PLUGIN_SRC=$VR_BUILD/slurm/vramctl.so
case $VR_BUILD in *-asan | *-tsan) skip "slurm: release build only" ;; esac
[ "$VR_TEST_DRIVER" = sim ] || skip "slurm: needs the simulated driver"
[ "$(id -u)" = 0 ] || skip "slurm: needs root"
for c in munged slurmctld slurmd srun sinfo squeue scontrol ss; do
	command -v "$c" >/dev/null || skip "slurm: '$c' not installed"
done
[ -e "$PLUGIN_SRC" ] || skip "slurm: plugin not built"
[ -x "$VR_BUILD/tests/cli/nvmllimit" ] || skip "tests/cli/nvmllimit is not built"
. "$VR_SRC/tests/cgroup2.bash"
root=$(cgroup2_root)
cgroup2_root >/dev/null
cg=$CG
[ -n "$root" ] || skip "slurm: no writable cgroup v2 hierarchy here (cgroup v1 only, or not delegated)"

VS=$(mktemp -d /tmp/vramctl-slurm.XXXXXX) || fail "mktemp"
chmod 0755 "$VS"
trap 'vs_stop; rm -rf "$VS"' EXIT
mkdir -p "$VS/bin/sim" "$VS/reg" "$VS/sim-root"
cp "$PLUGIN_SRC" "$VS/bin/vramctl_spank.so"
cp "$VR_BUILD/libvramctl.so" "$VR_BUILD/tests/slurm/gpuinfo" "$VR_BUILD/tests/cli/nvmllimit" "$VS/bin/"
cp -P "$VR_BUILD"/sim/lib* "$VS/bin/sim/"
chmod -R a+rX "$VS/bin"
chmod 1777 "$VS/reg"
VS_PLUGIN=$VS/bin/vramctl_spank.so
G=$VS/bin/gpuinfo
NL=$VS/bin/nvmllimit
# The simulated R615 card for slurmd (and so slurmstepd, whose NVML sets the
# limits) and for the jobs: one state directory.
export LD_LIBRARY_PATH=$VS/bin/sim VRAMSIM_DEVICES=8G VRAMSIM_STATE_DIR=$VS/sim-root
export VRAMSIM_DRIVER_RELEASE=615.20.01 VRAMSIM_CONTEXT_BYTES=$((64 << 20))
ARGS="lib=$VS/bin/libvramctl.so registry_dir=$VS/reg/%u nvml=$VS/bin/sim/libnvidia-ml.so.1"
vs_reconfigure "$ARGS enforce=driver cgroup_root=$root"
vs_start
case $? in 0) ;; 2) skip "slurm: slurmd cannot initialise cgroups here" ;; *) fail "Slurm did not start" ;; esac
run() { OUT=$(cd "$VS" && timeout 60 "$@" 2>&1); RC=$?; }
MIB=$((1 << 20))

# The driver alone: cuMemGetInfo says 256 MiB; 64 (context) + 150 fit,
# 64 + 200 do not: the simulated driver refuses, no library is loaded.
mkdir "$VS/b1" "$VS/b2"
run srun --gpu-mem=256M "$G" hold 150 "$VS/b1" 1
[ "$RC" = 0 ] || fail "srun --gpu-mem=256M hold 150: $OUT"
printf '%s\n' "$OUT" | grep -q "^rank=0 total=$((256 * MIB)) " || fail "total is not the driver's limit: $OUT"
printf '%s\n' "$OUT" | grep -q "^rank=0 alloc=ok" || fail "150 MiB under 256 refused: $OUT"
printf '%s\n' "$OUT" | grep -q "VRAMCTL_LIMIT=(unset)" || fail "enforce=driver set the library's contract: $OUT"
run srun --gpu-mem=256M "$G" hold 200 "$VS/b2" 1
printf '%s\n' "$OUT" | grep -q "^rank=0 alloc=denied" || fail "64 + 200 MiB past the 256 MiB limit not refused: $OUT"

# While a step runs: its cgroup and limits (hard the cap, soft the
# guarantee); after it, cleared and the cgroup gone.
run srun --gpu-mem=512M --gpu-mem-guarantee=128M bash -c \
	'c=$(sed -n "s/^0:://p" /proc/self/cgroup); echo "cgroup=$c"; '"$NL"' get /sys/fs/cgroup$c'
[ "$RC" = 0 ] || fail "srun with nvmllimit: $OUT"
step=$(printf '%s\n' "$OUT" | sed -n 's/^cgroup=//p')
case $step in "$cg"/vramctl_*.*) ;; *) fail "the task is not in the plugin's cgroup: $OUT" ;; esac
printf '%s\n' "$OUT" | grep -q "^soft $((128 * MIB)) hard $((512 * MIB)) " ||
	fail "the step's limits: $OUT"
for i in $(seq 100); do [ -d "$root$step" ] || break; sleep 0.1; done
[ -d "$root$step" ] && fail "the step's cgroup $root$step stayed after the step"
"$NL" get "/sys/fs/cgroup$step" | grep -qx "none" ||
	fail "the step's limits not cleared: $("$NL" get "/sys/fs/cgroup$step")"

# A driver refusal (cgroup v1 here): one line, and the library holds.
mkdir "$VS/v1"
vs_reconfigure "$ARGS enforce=driver cgroup_root=$VS/v1"
run srun --gpu-mem=256M "$G"
printf '%s\n' "$OUT" | grep -q "vramctl: the driver's memory limit was not set (.*not a cgroup v2 hierarchy.*); the library holds the cap" ||
	fail "no line for the driver's refusal: $OUT"
printf '%s\n' "$OUT" | grep -q "VRAMCTL_LIMIT=256M" || fail "the library does not hold the cap: $OUT"
printf '%s\n' "$OUT" | grep -q "^rank=0 total=$((256 * MIB)) " || fail "the library's cap: $OUT"

# both: the library and the driver.
vs_reconfigure "$ARGS enforce=both cgroup_root=$root"
run srun --gpu-mem=256M "$G"
printf '%s\n' "$OUT" | grep -q "VRAMCTL_LIMIT=256M" || fail "enforce=both: no library: $OUT"
printf '%s\n' "$OUT" | grep -q "not set" && fail "enforce=both: the driver refused: $OUT"
echo "all checks passed"
