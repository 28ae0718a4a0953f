#!/usr/bin/env bash
# guarantee_storm.sh [N] - N capped CUDA processes (bench/start_child.c, on
# the do-nothing driver) released at once (start_bench --many), each opening
# its GPU's device book at its first allocation: with no guarantee on the
# GPU, then while another group holds one (each process's allocation is
# then a borrow: its bytes on the board, the others' counted, the book and
# NVML's free memory read: the simulator's NVML, made to name the
# do-nothing driver's GPU). Milliseconds until the last has exited, three
# rounds each, interleaved, and how many borrows were refused (NVML still
# loading: each process gives it 500 ms, which a storm on two cores can
# outlast; they answer all the same). A benchmark: it asserts nothing. As
# root (a book is made).
#
#   VR_BUILD=build/gcc-release bench/guarantee_storm.sh 1000
set -u
O=${VR_BUILD:?set VR_BUILD to the build directory}
N=${1:-1000}
[ "$(id -u)" = 0 ] || { echo "guarantee_storm: run as root (it makes device books)" >&2; exit 1; }
W=$(mktemp -d /tmp/guarantee-storm.XXXXXX)
chmod 0755 "$W"
mkdir "$W/none" "$W/held" "$W/reg" "$W/sim"
chmod 0700 "$W/reg"
mkfifo "$W/hold"
"$O/bench/devbook_bench" --hold "$W/held" <"$W/hold" >"$W/ready" &
exec 3>"$W/hold"
for _ in $(seq 100); do [ -s "$W/ready" ] && break; sleep 0.05; done
storm() {
	env LD_PRELOAD="$O/libvramctl.so" VRAMCTL_LIMIT=1G VRAMCTL_REGISTRY_DIR="$W/reg" \
		VRAMCTL_DEVICE_DIR="$1" START_CHILD_ANY=1 \
		LD_LIBRARY_PATH="$O/bench/nulldriver:$O/sim" VRAMSIM_STATE_DIR="$W/sim" \
		VRAMSIM_DEVICES=80G VRAMSIM_UUIDS=GPU-42424242-4242-4242-4242-424242424242 \
		"$O/bench/start_bench" --many "$N" "$O/bench/start_child" 2>>"$W/log.$2"
}
refused() { grep -c "^vramctl: denied" "$W/log.$1" 2>/dev/null; : >"$W/log.$1"; }
printf '%d processes at once, ms until the last exits\n' "$N"
for round in 1 2 3; do
	a=$(storm "$W/none" none)
	b=$(storm "$W/held" held)
	printf 'round %d: no guarantee %s, a guarantee held %s (%s borrows refused)\n' "$round" \
		"$a" "$b" "$(refused held)"
done
exec 3>&-
wait
"$O/vramctl" guard --reclaim --device-dir "$W/none" 2>/dev/null
rm -rf "$W"
