#!/usr/bin/env bash
# guarantee.sh - guarantees on the card (#26), on a simulated 16 GiB card
# whose contexts take nothing (so every figure is exact):
#   1. the rule, step by step: a borrower (a group past its guarantee) may
#      take only memory guaranteed to no other group; the guaranteed group
#      gets its guarantee; the borrower is refused (the denial names who
#      holds the guarantee), never killed; a guarantee that does not fit is
#      refused with the numbers (vramctl run: exit 125; the environment:
#      said, the process borrows); a group whose members are all killed
#      gives its guarantee back.
#   2. randomized: groups with and without guarantees allocate and free at
#      random across processes, members killed and restarted at random;
#      after every step no group passes its limit, and no group under its
#      guarantee is ever refused. As root, with vrslurm (the suite's user)
#      there, another user attacks the device book all along (#38: its
#      locks on every byte of the book and on the board, writes tried).
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (the card's figures exact)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
if [ "$(id -u)" = 0 ] && id vrslurm >/dev/null 2>&1 && command -v runuser >/dev/null; then
	# The books where the attacker can reach them (the test's own
	# directory is root's 0700).
	A=$(mktemp -d /tmp/vramctl-guarantee.XXXXXX)
	chmod 0755 "$A"
	mkdir "$A/devices"
	cp "$VR_SRC/tests/hook/attacker.py" "$A/"
	# The guarantees' semaphores outlive the files: root ends them.
	trap '"$V" guard --reclaim --device-dir "$A/devices"; rm -rf "$A"' EXIT
	export VRAMCTL_DEVICE_DIR=$A/devices ATTACKER=vrslurm ATTACKER_PY=$A/attacker.py
else
	echo "note: no attacker (needs root and the user vrslurm)"
	[ "$(id -u)" = 0 ] && trap '"$V" guard --reclaim' EXIT
fi
python3 "$VR_SRC/tests/hook/guarantee_test.py" "${GUARANTEE_STEPS:-400}" || fail "see above"
finish
