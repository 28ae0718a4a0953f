# doctor_guarantees.sh - `vramctl doctor` under guarantees (#35, item 5),
# on a simulated 16 GiB card whose contexts take nothing: a group's
# guarantee holds the whole card (and, then, NVML is missing). The
# self-test still runs (its own registry and device book: others'
# guarantees are not what it tests), the `guarantees` check names the cause
# with the figures, and the health check of vramctl-doctor(1) and
# docs/usage.md (drain when doctor exits non-zero) leaves this healthy node
# alone: exit 0.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
unset VRAMCTL_LIBRARY # the self-test's program is this build's
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
: >preload-none
export VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-none

# line STATUS ID TEXT WHAT: out has a line "STATUS ID ...TEXT..."
line() {
	grep -E "^$1 +$2 " out | grep -qF -- "$3" ||
		{ fail "$4: no '$1 $2 ... $3' line:"; sed 's/^/      /' out >&2; }
}

# No guarantee: the check says so, OK.
"$V" doctor >out 2>err
line OK guarantees "no group holds a guarantee" "no guarantee"

# A group holds the whole card as its guarantee, while doctor runs.
mkfifo hold
LD_PRELOAD=$LIB VRAMCTL_GROUP=ga VRAMCTL_LIMIT=16G VRAMCTL_GUARANTEE=16G "$MEMCTL" <hold >ready &
exec 3>hold
until grep -q ready ready 2>/dev/null; do sleep 0.01; done
echo "a 100" >&3

"$V" doctor >out 2>err
expect_rc 0 $? "guarantees holding the card: a healthy node"
for way in linked dlsym procaddr procaddr_old ptds; do
	line OK "hook.$way" "capped" "the self-test runs under others' guarantees ($way)"
done
line WARN guarantees "GPU 0: 16 GiB guaranteed to 1 group" "the guarantees' sum"
line WARN guarantees "unguaranteed free 0 B" "the free memory nobody is guaranteed"
line WARN guarantees "the guarantees hold all the free memory" "the cause, named"
grep -q "NOT capped" out && fail "a self-test failure blamed on interception: $(cat out)"

# The health check as the manual writes it: never drains this node.
drained=0
"$V" doctor --json >/dev/null || drained=1
expect_rc 0 "$drained" "the health check under guarantees"

# NVML missing while a guarantee is held: borrowing cannot be checked, said.
VRAMCTL_NVML=$TMPDIR/none/libnvidia-ml.so.1 "$V" doctor >out 2>err
expect_rc 0 $? "no NVML under guarantees: a healthy node"
line OK hook.dlsym "capped" "no NVML: the self-test still runs"
line WARN guarantees "NVML is not available, so borrowing cannot be checked" "no NVML: the cause"
"$V" doctor --json | jq -e '.checks[] | select(.id == "guarantees") | .status == "warn"' >/dev/null ||
	fail "the JSON's guarantees check"
exec 3>&-
wait
finish
