#!/usr/bin/env bash
# top_bench - CPU used by `vramctl top` at one refresh a second, in a real
# terminal (tmux), over SECONDS (default 10), with RECORDS process records
# (default 200) held by bench/status_bench. A benchmark: prints the figure,
# asserts nothing. Target: under 1 % of a core.
#
#   bench/top_bench.sh [SECONDS] [RECORDS]      (VR_BUILD: the build folder)
set -u
secs=${1:-10}
records=${2:-200}
: "${VR_BUILD:?set VR_BUILD to the build folder (e.g. build/gcc-release)}"
VR_BUILD=$(cd "$VR_BUILD" && pwd)
command -v tmux >/dev/null || { echo "top_bench: tmux not installed, skipped"; exit 0; }
if [ "${1:-}" != --measure ]; then
	exec "$VR_BUILD/bench/status_bench" -n "$records" -x "VR_BUILD='$VR_BUILD' '$0' --measure $secs"
fi
secs=${2:-10}
sock=$(mktemp -u /tmp/vramctl-top-bench.XXXXXX)
T() { tmux -S "$sock" -f /dev/null "$@"; }
T new-session -d -s b -x 160 -y 50 "env VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR' LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' VRAMSIM_STATE_DIR='${VRAMSIM_STATE_DIR:-}' '$VR_BUILD/vramctl' top -d 1"
pid=
for ((i = 0; i < 100; i++)); do
	# The pane's process: env execs vramctl, which execs libexec/vramctl-top
	# (its command line then reads "top -d 1"): one PID throughout.
	pid=$(T display-message -p -t b '#{pane_pid}' 2>/dev/null || true)
	[ -n "$pid" ] && T capture-pane -p -t b | grep -q "vramctl top" && break
	sleep 0.1
done
[ -n "$pid" ] || { echo "top_bench: top did not start"; T kill-server; exit 1; }
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
a=$(ticks)
t0=$(date +%s.%N)
sleep "$secs"
b=$(ticks)
t1=$(date +%s.%N)
rows=$(T capture-pane -p -t b | grep -c "bench-")
T send-keys -t b q
sleep 0.3
T kill-server 2>/dev/null
awk -v a="$a" -v b="$b" -v hz="$hz" -v t0="$t0" -v t1="$t1" -v rows="$rows" -v n="$VRAMCTL_REGISTRY_DIR" 'BEGIN {
	cpu = (b - a) / hz; wall = t1 - t0;
	pct = 100 * cpu / wall
	printf "top_bench: vramctl top -d 1 for %.1f s (%d rows on screen): %.3f s CPU = %.2f %% of a core (target < 1 %%: %s)\n", wall, rows, cpu, pct, pct < 1 ? "met" : "not met"
}'
