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
#      guarantee is ever refused.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (the card's figures exact)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
python3 "$VR_SRC/tests/hook/guarantee_test.py" "${GUARANTEE_STEPS:-400}" || fail "see above"
finish
