#!/usr/bin/env bash
# tests/slurm/cluster.sh - the SPANK plugin in a real one-node Slurm.
#
# Starts munged, slurmctld and slurmd (Debian's packages) with a private
# configuration under a fresh directory, the project's simulated GPU as the
# driver and the plugin in plugstack.conf, runs jobs through srun, sbatch and
# as a non-root user, and stops the daemons by PID at the end (also on
# failure). Needs root, Slurm installed and a user for the non-root part:
# scripts/install-deps provides both. Skips (77) with the reason otherwise.
#
# A transcript of every command and its output is kept in $VS/session.txt
# (VR_SLURM_TRANSCRIPT=FILE copies it out; docs/slurm.md shows one).
set -u

: "${VR_BUILD:?run through tests/run}" "${VR_SRC:?run through tests/run}"
. "$VR_SRC/tests/slurm/lib.sh" # skip, fail, the cluster
TEST_USER=${VR_SLURM_USER:-vrslurm}
PLUGIN_SRC=$VR_BUILD/slurm/vramctl.so
LIB=$VR_BUILD/libvramctl.so
SIMDIR=$VR_BUILD/sim
GPUINFO=$VR_BUILD/tests/slurm/gpuinfo

case $VR_BUILD in
*-asan | *-tsan)
	skip "slurm: runs in the release build only (the plugin is loaded by Slurm's own uninstrumented daemons)"
	;;
esac
[ "$VR_TEST_DRIVER" = sim ] || skip "slurm: needs the simulated driver"
[ "$(id -u)" = 0 ] || skip "slurm: needs root to start slurmctld and slurmd"
for c in munged slurmctld slurmd srun sbatch sinfo squeue scontrol runuser ss; do
	command -v "$c" >/dev/null ||
		skip "slurm: '$c' not installed (scripts/install-deps installs Slurm)"
done
[ -e "$PLUGIN_SRC" ] || skip "slurm: plugin not built ($PLUGIN_SRC; needs libslurm-dev)"
[ -e "$LIB" ] || skip "slurm: the injected library is not built ($LIB)"
[ -e "$SIMDIR/libcuda.so.1" ] || skip "slurm: the simulated driver is not built"
[ -x "$GPUINFO" ] || skip "slurm: $GPUINFO is not built"
id -u "$TEST_USER" >/dev/null 2>&1 ||
	skip "slurm: no user '$TEST_USER' for the non-root part (scripts/install-deps creates it)"
TEST_UID=$(id -u "$TEST_USER")
# The whole cluster in a private mount namespace (its own /etc copy, jobs
# directory and /dev/shm): the machine's preload can be switched on for its
# jobs alone (tests/machine_ns.bash).
. "$VR_SRC/tests/machine_ns.bash"

# A directory every job user can read: the daemons' files, the binaries the
# jobs run (copied, so the user needs no access to the build tree), shared
# state of the simulated card, barriers.
VS=$(mktemp -d /tmp/vramctl-slurm.XXXXXX) || fail "mktemp"
chmod 0755 "$VS"
cleanup() {
	vs_stop
	[ -n "${VR_SLURM_TRANSCRIPT:-}" ] && cp "$VS/session.txt" "$VR_SLURM_TRANSCRIPT"
	rm -rf "$VS"
}
trap cleanup EXIT

mkdir -p "$VS/bin/sim" "$VS/reg"
cp "$PLUGIN_SRC" "$VS/bin/vramctl_spank.so"
cp "$LIB" "$VS/bin/libvramctl.so"
cp -P "$SIMDIR"/lib* "$VS/bin/sim/"
cp "$GPUINFO" "$VS/bin/gpuinfo"
cp "$VR_BUILD/vramctl" "$VS/bin/vramctl" # the watcher (watcher=)
chmod -R a+rX "$VS/bin"
chmod 1777 "$VS/reg" # like /tmp: each user's registry directory is made on first use
VS_PLUGIN=$VS/bin/vramctl_spank.so
LIBV=$VS/bin/libvramctl.so
G=$VS/bin/gpuinfo
GIB=1073741824
ARGS_BASE="lib=$LIBV registry_dir=$VS/reg/%u bytes_per_shard=512M watcher=$VS/bin/vramctl"

vs_reconfigure "$ARGS_BASE allow_optout=yes"
vs_start
case $? in
0) ;;
2) skip "slurm: slurmd cannot initialise cgroups on this machine (see above)" ;;
*) fail "Slurm did not start" ;;
esac
NODE=$(hostname -s)

# The jobs' environment: the simulated 8 GiB card as the driver, shared by
# all tasks of a user through one state directory; a preload the user had
# already, which must survive.
mkdir -p "$VS/sim-root" "$VS/sim-user"
chown "$TEST_USER" "$VS/sim-user"
export LD_LIBRARY_PATH=$VS/bin/sim VRAMSIM_DEVICES=8G VRAMSIM_STATE_DIR=$VS/sim-root
export LD_PRELOAD_USER=libdl.so.2

# Runs a command (as root or, with AS_USER=1, as the test user), appending it
# and its output to the transcript. Output in $OUT, status in $RC.
run() {
	local prefix='#'
	if [ "${AS_USER:-0}" = 1 ]; then
		prefix="$TEST_USER\$"
		OUT=$(cd "$VS" && runuser -u "$TEST_USER" -- env -i PATH="$PATH" HOME="$VS" \
			SLURM_CONF="$SLURM_CONF" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
			VRAMSIM_DEVICES=8G VRAMSIM_STATE_DIR="$VS/sim-user" \
			timeout 60 "$@" 2>&1)
	else
		OUT=$(cd "$VS" && LD_PRELOAD=$LD_PRELOAD_USER timeout 60 "$@" 2>&1)
	fi
	RC=$?
	OUT=$(printf '%s\n' "$OUT" | grep -v "^srun: job [0-9]* \(queued\|has been\)")
	{
		printf '%s %s\n' "$prefix" "$(printf '%q ' "$@" | sed "s|$VS/bin/||g; s|$VS|\$VS|g")"
		if [ "${2:-}" = --help ]; then
			printf '%s\n' "$OUT" | grep -A4 -- '--gpu-mem'
		elif [ -n "$OUT" ]; then
			printf '%s\n' "$OUT" | sed "s|$VS/bin/||g; s|$VS|\$VS|g"
		fi
		[ "$RC" = 0 ] || echo "(exit $RC)"
	} >>"$VS/session.txt"
}
# The value of key=... on the line of rank R (default 0).
field() { printf '%s\n' "$OUT" | grep "^rank=${3:-0} " | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n1; }
expect_total() {
	local total devtotal
	total=$(field total "" "${2:-0}")
	devtotal=$(field devtotal "" "${2:-0}")
	[ "$total" = "$1" ] && [ "$devtotal" = "$1" ] ||
		fail "$3: expected total $1, got total=$total devtotal=$devtotal; output: $OUT"
}
# The id of the job the last command ran (its tasks print SLURM_JOB_ID).
job_id() { run srun printenv SLURM_JOB_ID; printf '%s\n' "$OUT" | tail -n1; }
# Waits (bounded: 20 s) until the registry has no region for job $1.
expect_books_gone() {
	local i dir=$VS/reg/$2
	for i in $(seq 200); do
		ls "$dir" 2>/dev/null | grep -q "^slurm-$1-" || return 0
		sleep 0.1
	done
	fail "registry files of job $1 still there after the job: $(ls "$dir")"
}

# --- the option is offered, and bad values never reach the queue ---------
run srun --help
printf '%s\n' "$OUT" | grep -q -- '--gpu-mem=SPEC' || fail "srun --help lacks --gpu-mem"
run sbatch --help
printf '%s\n' "$OUT" | grep -q -- '--gpu-mem=SPEC' || fail "sbatch --help lacks --gpu-mem"
run salloc --help
printf '%s\n' "$OUT" | grep -q -- '--gpu-mem=SPEC' || fail "salloc --help lacks --gpu-mem"

before=$(job_id)
run srun --gpu-mem=bogus "$G"
[ "$RC" != 0 ] || fail "srun --gpu-mem=bogus succeeded"
printf '%s\n' "$OUT" | grep -q "vramctl: --gpu-mem=bogus" || fail "no clear message: $OUT"
run sbatch --gpu-mem=12Q --wrap true
[ "$RC" != 0 ] || fail "sbatch --gpu-mem=12Q was accepted"
printf '%s\n' "$OUT" | grep -q "vramctl: --gpu-mem=12Q" || fail "no clear message: $OUT"
run salloc --gpu-mem=0 true
[ "$RC" != 0 ] || fail "salloc --gpu-mem=0 was accepted"
printf '%s\n' "$OUT" | grep -q "vramctl: --gpu-mem=0" || fail "no clear message: $OUT"
after=$(job_id)
[ "$after" = $((before + 1)) ] || fail "a job was queued for a bad value (job ids $before, $after)"

# --- a capped step sees a 1 GiB device; LD_PRELOAD is appended to ---------
run srun --gpu-mem=1G "$G"
[ "$RC" = 0 ] || fail "srun --gpu-mem=1G: $OUT"
expect_total $GIB 0 "srun --gpu-mem=1G"
[ "$(field LD_PRELOAD)" = "$LD_PRELOAD_USER:$LIBV" ] ||
	fail "LD_PRELOAD not appended to: $(field LD_PRELOAD)"

# --- a cap for a GPU the node does not have is never dropped in silence ----
# (one GPU here): the library says so and refuses every device allocation.
run srun --gpu-mem=1=1G "$G"
expect_total 0 0 "srun --gpu-mem=1=1G on a one-GPU node"
printf '%s\n' "$OUT" | grep -q "vramctl: VRAMCTL_LIMIT names GPU '1'.*(fail closed)" ||
	fail "srun --gpu-mem=1=1G: no clear message: $OUT"
mkdir "$VS/barrier0"
run srun --gpu-mem=GPU-deadbeef=1G "$G" hold 1 "$VS/barrier0" 1
printf '%s\n' "$OUT" | grep -q "^rank=0 alloc=denied" ||
	fail "srun --gpu-mem=GPU-deadbeef=1G: the allocation was not refused: $OUT"

run srun --gpu-mem=1G --gpu-mem-growth printenv VRAMCTL_GROWTH
[ "$OUT" = 1 ] || fail "--gpu-mem-growth did not set VRAMCTL_GROWTH=1: $OUT"

# --- spill: the budget in bytes; a bad size refused before queueing --------
run srun --gpu-mem=1G --gpu-mem-spill=2G printenv VRAMCTL_SPILL
[ "$OUT" = 2147483648 ] || fail "--gpu-mem-spill=2G: VRAMCTL_SPILL=$OUT"
run srun --gpu-mem=1G --gpu-mem-spill printenv VRAMCTL_SPILL
case $OUT in '' | *[!0-9]*) fail "--gpu-mem-spill (auto): VRAMCTL_SPILL=$OUT" ;; esac
run srun --gpu-mem=1G --gpu-mem-spill=lots true
[ "$RC" != 0 ] || fail "--gpu-mem-spill=lots accepted"
printf '%s\n' "$OUT" | grep -q "vramctl: --gpu-mem-spill=lots" || fail "no clear message: $OUT"

# --- waiting and parking (#36): the contract's times; a bad one refused ----
run srun --gpu-mem=1G --gpu-mem-wait=30s --gpu-mem-park-idle=manual \
	sh -c 'echo "$VRAMCTL_WAIT $VRAMCTL_PARK_IDLE $VRAMCTL_PARK_BUDGET"'
case $OUT in "30s manual "[1-9]*) ;; *) fail "--gpu-mem-wait, --gpu-mem-park-idle: $OUT" ;; esac
run srun --gpu-mem=1G --gpu-mem-wait printenv VRAMCTL_WAIT
[ "$OUT" = 60s ] || fail "--gpu-mem-wait (bare): VRAMCTL_WAIT=$OUT"
run srun --gpu-mem=1G --gpu-mem-park-idle=soon true
[ "$RC" != 0 ] || fail "--gpu-mem-park-idle=soon accepted"
printf '%s\n' "$OUT" | grep -q "vramctl: --gpu-mem-park-idle=soon" || fail "no clear message: $OUT"
run srun --gpu-mem=1G printenv VRAMCTL_SPILL
[ "$RC" != 0 ] || fail "VRAMCTL_SPILL set without --gpu-mem-spill: $OUT"

# --- a guarantee (issues #26, #38): slurmstepd, as root, gives it in the
# device book of each GPU of the step (device_dir=) before the tasks start,
# for the job's user, held for the step; the tasks get VRAMCTL_GUARANTEE and
# the token that names it. One that cannot be given (no NVML for the
# plugin here) is one line, and the cap holds. One above the cap, or a
# site that forbids guarantees, is refused before queueing.
mkdir -m 0755 "$VS/devices"
cp "$VR_BUILD/vramctl" "$VS/bin/"
vs_reconfigure "$ARGS_BASE allow_optout=yes device_dir=$VS/devices nvml=$VS/bin/sim/libnvidia-ml.so.1"
run srun --gpu-mem=4G --gpu-mem-guarantee=1G printenv VRAMCTL_GUARANTEE
[ "$OUT" = 1G ] || fail "--gpu-mem-guarantee=1G: VRAMCTL_GUARANTEE=$OUT"
AS_USER=1 run srun --gpu-mem=4G --gpu-mem-guarantee=1G sh -c \
	"printenv VRAMCTL_GUARANTEE_TOKEN; $VS/bin/vramctl status --json"
printf '%s\n' "$OUT" | head -n1 | grep -qE '^[0-9a-f]{16}$' || fail "no token: $OUT"
printf '%s\n' "$OUT" | tail -n +2 | python3 -c 'import json, sys
d = json.load(sys.stdin)["devices"][0]
g = [e for e in d.get("guarantees") or [] if e["uid"] == int(sys.argv[1])]
sys.exit(not (len(g) == 1 and g[0]["guarantee_bytes"] == 1 << 30 and
              g[0]["group"].startswith("slurm-")))' \
	"$TEST_UID" || fail "the step's guarantee is not in the book as the job's user's: $OUT"
# slurmstepd holds it: once the steps' are gone, so are their guarantees.
for _ in $(seq 100); do
	after=$(VRAMCTL_DEVICE_DIR=$VS/devices "$VR_BUILD/vramctl" status --json |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)["devices"][0].get("guarantees") or []))')
	[ "$after" = 0 ] && break
	sleep 0.1
done
[ "$after" = 0 ] || fail "guarantees outlived their steps: $after"
VRAMCTL_DEVICE_DIR=$VS/devices "$VR_BUILD/vramctl" guard --reclaim
vs_reconfigure "$ARGS_BASE allow_optout=yes device_dir=$VS/devices nvml=$VS/none.so"
run srun --gpu-mem=4G --gpu-mem-guarantee=1G printenv VRAMCTL_LIMIT VRAMCTL_GUARANTEE
printf '%s\n' "$OUT" | grep -q "vramctl: the guarantee cannot be given: .*; no guarantee (the cap holds)" ||
	fail "a guarantee not given is not said: $OUT"
printf '%s\n' "$OUT" | grep -qx 4G || fail "the cap does not hold: $OUT"
vs_reconfigure "$ARGS_BASE allow_optout=yes"
run srun --gpu-mem=1G --gpu-mem-guarantee=2G true
[ "$RC" != 0 ] || fail "--gpu-mem-guarantee above --gpu-mem accepted"
printf '%s\n' "$OUT" | grep -q "is above the cap there" || fail "no clear message: $OUT"
run srun --gpu-mem=1G printenv VRAMCTL_GUARANTEE
[ "$RC" != 0 ] || fail "VRAMCTL_GUARANTEE set without --gpu-mem-guarantee: $OUT"

# --- two tasks of one job share the cap: 600 MiB each, one is denied ------
mkdir "$VS/barrier1"
run srun -n2 --gpu-mem=1G bash -c "$G hold 600 $VS/barrier1 2; ls $VS/reg/0"
[ "$RC" = 0 ] || fail "srun -n2: $OUT"
ok=$(printf '%s\n' "$OUT" | grep -c 'alloc=ok')
denied=$(printf '%s\n' "$OUT" | grep -c 'alloc=denied')
[ "$ok" = 1 ] && [ "$denied" = 1 ] || fail "srun -n2: expected one ok, one denied: $OUT"
g1=$(field VRAMCTL_GROUP)
[ "$g1" = "$(field VRAMCTL_GROUP "" 1)" ] || fail "tasks of one job in different groups"
case $g1 in slurm-*-"$NODE") ;; *) fail "group name $g1" ;; esac
jid=$(echo "$g1" | cut -d- -f2)
printf '%s\n' "$OUT" | grep -qx "$g1.vrg" || fail "the job's region was not in $VS/reg/0: $OUT"
expect_books_gone "$jid" 0

# --- sbatch: the option reaches steps inside the script -------------------
run sbatch --wait --gpu-mem=1G -o "$VS/batch.out" --wrap "srun $G"
[ "$RC" = 0 ] || fail "sbatch --wait: $OUT"
OUT=$(cat "$VS/batch.out")
printf '%s\n' "$OUT" | sed "s|$VS/bin/||g; s|$VS|\$VS|g" >>"$VS/session.txt"
expect_total $GIB 0 "srun inside sbatch --gpu-mem=1G"

# --- salloc: the option reaches steps run in the allocation --------------
run salloc --gpu-mem=1G srun "$G"
[ "$RC" = 0 ] || fail "salloc --gpu-mem=1G srun: $OUT"
expect_total $GIB 0 "srun inside salloc --gpu-mem=1G"

# --- shards: --gres=shard:N is a cap of N x bytes_per_shard (512M) --------
run srun --gres=shard:2 "$G"
[ "$RC" = 0 ] || fail "srun --gres=shard:2: $OUT"
expect_total $GIB 0 "--gres=shard:2"
run srun --gres=shard:3 --gpu-mem=700M "$G"
expect_total $((700 << 20)) 0 "--gres=shard:3 --gpu-mem=700M (a user may lower the cap)"
run srun --gres=shard:1 --gpu-mem=4G "$G"
expect_total $((512 << 20)) 0 "--gres=shard:1 --gpu-mem=4G (but not raise it)"
printf '%s\n' "$OUT" | grep -q "does not fit the job's 1 shard" || fail "no note for 4G > shard: $OUT"

# --- jobs that do not ask are untouched -----------------------------------
run srun "$G"
expect_total $((8 * GIB)) 0 "a job without --gpu-mem"
[ "$(field LD_PRELOAD)" = "$LD_PRELOAD_USER" ] || fail "LD_PRELOAD changed: $(field LD_PRELOAD)"
[ "$(field VRAMCTL_LIMIT)" = "(unset)" ] || fail "VRAMCTL_LIMIT set for a job that did not ask"

# --- opting out inside a capped batch job (allowed here) ------------------
run sbatch --wait --gpu-mem=1G -o "$VS/optout.out" --wrap "srun --gpu-mem=none $G"
OUT=$(cat "$VS/optout.out")
printf '%s\n' "$OUT" | sed "s|$VS/bin/||g; s|$VS|\$VS|g" >>"$VS/session.txt"
expect_total $((8 * GIB)) 0 "srun --gpu-mem=none inside a capped batch job"
[ "$(field LD_PRELOAD)" = "$LD_PRELOAD_USER" ] || fail "opt-out kept the library: $OUT"

# --- a site default for GPU jobs, and no opting out -----------------------
vs_reconfigure "$ARGS_BASE default=2G allow_optout=no"
run srun --gpu-mem=none "$G"
[ "$RC" != 0 ] || fail "--gpu-mem=none accepted with allow_optout=no"
printf '%s\n' "$OUT" | grep -q "does not allow" || fail "no clear message: $OUT"
run srun --gres=gpu:1 "$G"
expect_total $((2 * GIB)) 0 "site default for a GPU job"
vs_reconfigure "$ARGS_BASE allow_spill=no"
run srun --gpu-mem=1G --gpu-mem-spill=2G true
[ "$RC" != 0 ] || fail "--gpu-mem-spill accepted with allow_spill=no"
printf '%s\n' "$OUT" | grep -q "does not allow spilling" || fail "no clear message: $OUT"
vs_reconfigure "$ARGS_BASE allow_guarantee=no"
run srun --gpu-mem=1G --gpu-mem-guarantee=512M true
[ "$RC" != 0 ] || fail "--gpu-mem-guarantee accepted with allow_guarantee=no"
printf '%s\n' "$OUT" | grep -q "does not allow GPU memory guarantees" || fail "no clear message: $OUT"
vs_reconfigure "$ARGS_BASE default=2G allow_optout=no"
run srun "$G"
expect_total $((8 * GIB)) 0 "site default applied to a job without GPUs"

# --- a bad plugin argument fails the command with its name, not the node --
vs_reconfigure "$ARGS_BASE colour=blue"
run srun --gpu-mem=1G "$G"
[ "$RC" != 0 ] || fail "a bad plugin argument went unnoticed"
printf '%s\n' "$OUT" | grep -q "unknown argument 'colour=blue'" || fail "no clear message: $OUT"
vs_reconfigure "$ARGS_BASE allow_optout=yes"
run srun "$G"
[ "$RC" = 0 ] || fail "the node did not recover from a bad plugin argument: $OUT"

# --- the cap follows the job, not the environment (issue #34) -------------
# Steps of a capped batch job that lost its option: srun run with its
# environment cleared (the option rides in it) takes the job's cap on the
# node; srun --export=NONE (the tasks' environment cleared) is capped too.
run sbatch --wait --gpu-mem=1G -o "$VS/export.out" --wrap "env -i PATH=\$PATH \
	SLURM_CONF=\$SLURM_CONF SLURM_JOB_ID=\$SLURM_JOB_ID LD_LIBRARY_PATH=\$LD_LIBRARY_PATH \
	VRAMSIM_DEVICES=8G VRAMSIM_STATE_DIR=\$VRAMSIM_STATE_DIR srun $G
	srun --export=NONE /usr/bin/printenv VRAMCTL_LIMIT"
OUT=$(cat "$VS/export.out")
printf '%s\n' "$OUT" | sed "s|$VS/bin/||g; s|$VS|\$VS|g" >>"$VS/session.txt"
expect_total $GIB 0 "env -i srun inside sbatch --gpu-mem=1G"
printf '%s\n' "$OUT" | grep -q "this step asked for no cap: the job's on this node applies" ||
	fail "a step without the option: the job's cap was not said: $OUT"
printf '%s\n' "$OUT" | grep -qx "1G" || fail "srun --export=NONE inside a capped job: not capped: $OUT"

# Without the machine's preload: a task that clears LD_PRELOAD runs
# outside the cap. The step's watcher says it and charges it to the job's
# group: a capped process of the job is refused (within a few looks).
mkdir "$VS/barrier5" "$VS/barrier5x"
run srun --gpu-mem=1G bash -c "env -u LD_PRELOAD $G hold 900 $VS/barrier5 2 &
	for i in \$(seq 100); do
		$G hold 300 $VS/barrier5x 0 | grep -q alloc=denied && break; sleep 0.1
	done
	echo member-refused-after=\$i; touch $VS/barrier5/done; wait"
printf '%s\n' "$OUT" | grep -q "runs outside the cap (LD_PRELOAD removed): .* on GPU 0, counted against group slurm-" ||
	fail "unset LD_PRELOAD without the preload: the watcher did not say it: $OUT"
case $OUT in *member-refused-after=100*) fail "the escapee was never counted against the job: $OUT" ;; esac

# With the machine's preload (this namespace's /etc/ld.so.preload): a task
# that clears LD_PRELOAD and the contract stays capped (the job's record).
"$VR_BUILD/vramctl" preload enable --library "$LIBV" >/dev/null || fail "vramctl preload enable"
run srun --gpu-mem=1G bash -c "unset LD_PRELOAD VRAMCTL_LIMIT VRAMCTL_GROUP VRAMCTL_REGISTRY_DIR; $G"
expect_total $GIB 0 "srun --gpu-mem=1G, the task's environment cleared, with the preload"
printf '%s\n' "$OUT" | grep -q "VRAMCTL_LIMIT is not set (its environment was changed); capped as part of group slurm-" ||
	fail "the cleared task did not say why it is capped: $OUT"
"$VR_BUILD/vramctl" preload disable >/dev/null || fail "vramctl preload disable"

# --- the same as a user ----------------------------------------------------
# Another local user took the user's registry path first (anyone can make a
# name in a sticky directory like /tmp): the plugin, as root, moves it
# aside and makes the directory the user's own, so the job's tasks still
# share one cap (they would each get their own books otherwise).
mkdir -m 0755 "$VS/reg/$TEST_UID"
chown nobody "$VS/reg/$TEST_UID"
mkdir "$VS/barrier2" "$VS/user-out"
chown "$TEST_USER" "$VS/barrier2" "$VS/user-out"
AS_USER=1 run srun --gpu-mem=1G "$G"
[ "$RC" = 0 ] || fail "as $TEST_USER: $OUT"
expect_total $GIB 0 "as $TEST_USER, srun --gpu-mem=1G"
[ "$(field LD_PRELOAD)" = "$LIBV" ] || fail "as $TEST_USER: LD_PRELOAD $(field LD_PRELOAD)"
AS_USER=1 run srun -n2 --gpu-mem=1G bash -c "$G hold 600 $VS/barrier2 2; ls $VS/reg/$TEST_UID"
ok=$(printf '%s\n' "$OUT" | grep -c 'alloc=ok')
denied=$(printf '%s\n' "$OUT" | grep -c 'alloc=denied')
[ "$ok" = 1 ] && [ "$denied" = 1 ] || fail "as $TEST_USER, srun -n2: $OUT"
g2=$(field VRAMCTL_GROUP)
printf '%s\n' "$OUT" | grep -qx "$g2.vrg" || fail "as $TEST_USER: no region in $VS/reg/$TEST_UID"
[ "$(stat -c %u:%a "$VS/reg/$TEST_UID")" = "$TEST_UID:700" ] ||
	fail "registry dir not the user's own: $(stat -c %u:%a "$VS/reg/$TEST_UID")"
ls -a "$VS/reg" | grep -q "^\.$TEST_UID\.taken-by-uid-65534\." || fail "the squat was not moved aside"
expect_books_gone "$(echo "$g2" | cut -d- -f2)" "$TEST_UID"
AS_USER=1 run sbatch --wait --gpu-mem=1G -o "$VS/user-out/batch.out" --wrap "srun $G"
OUT=$(cat "$VS/user-out/batch.out")
printf '%s\n' "$OUT" | sed "s|$VS/bin/||g; s|$VS|\$VS|g" >>"$VS/session.txt"
expect_total $GIB 0 "as $TEST_USER, srun inside sbatch --gpu-mem=1G"
AS_USER=1 run srun "$G"
expect_total $((8 * GIB)) 0 "as $TEST_USER, a job without --gpu-mem"
[ "$(field LD_PRELOAD)" = "(unset)" ] || fail "as $TEST_USER: LD_PRELOAD set: $OUT"

# docs/slurm.md's "A real session" is this session, abridged: each of its
# commands, in its order, is one of the session's, and each line it shows
# for a command is one the command printed (in any order: the tasks of a
# step print as they run), the numbers Slurm and the kernel choose (job
# IDs, PIDs, ranks, the test user's uid) aside, and salloc's "revoked"
# line, which comes only when the job ends before salloc does.
session_lines() {
	sed -E 's/ +$//; s/slurm-[0-9]+-/slurm-N-/g; s/(batch job|job allocation|Job allocation) [0-9]+/\1 N/g
		s/\(pid [0-9]+\)/(pid P)/g; s|/reg/[0-9]+|/reg/UID|g; s/^rank=[0-9]+ /rank=R /' |
		grep -v '^salloc: Job allocation N has been revoked'
}
awk '/^## A real session/ { on = 1 } on && /^```$/ { if (in_) exit; in_ = 1; next } in_ { print }' \
	"$VR_SRC/docs/slurm.md" | session_lines >"$VS/doc.txt"
[ -s "$VS/doc.txt" ] || fail "docs/slurm.md: no session quoted"
session_lines <"$VS/session.txt" >"$VS/session.masked"
python3 - "$VS/session.masked" "$VS/doc.txt" >"$VS/doc.missing" <<'EOF2' ||
import sys
def blocks(path):
    out = []
    for line in open(path).read().split("\n"):
        if line.startswith("# ") or line.startswith("vrslurm$ "):
            out.append([line, []])
        elif out and line:
            out[-1][1].append(line)
    return out
session, doc = blocks(sys.argv[1]), blocks(sys.argv[2])
at = 0
for cmd, lines in doc:
    while at < len(session) and session[at][0] != cmd:
        at += 1
    if at == len(session):
        sys.exit(print(cmd) or 1)
    have = list(session[at][1])
    for line in lines:
        if line not in have:
            sys.exit(print(cmd + "  ->  " + line) or 1)
        have.remove(line)
    at += 1
EOF2
	fail "docs/slurm.md's session has a line this session does not print: $(cat "$VS/doc.missing")"

echo "ok: slurm $(srun --version | cut -d' ' -f2), node $NODE"
