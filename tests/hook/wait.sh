#!/usr/bin/env bash
# wait.sh - waiting for room instead of out-of-memory (#36, --wait,
# VRAMCTL_WAIT), processes of one 1 GiB group on the simulated card:
#   1. one holds 800 MiB for 2 s, the other asks 600 MiB with a 10 s wait:
#      it is granted after the release and well before its deadline (the
#      waiters' sleep slice is made 60 s here: only the release's wake-up
#      can serve it in time); without a wait the same request is refused at
#      once, said as a denial;
#   2. a wait that runs out is refused, "waited 1 s for 600 MiB on GPU 0";
#   3. every member waiting: the newest fails at once, said, the older is
#      served when room is made; a request past the cap never waits;
#   4. the waiter shows in status (table, JSON, Prometheus) while it waits;
#      `vramctl run --wait --report` counts its waits and the time waited.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (its figures exact)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0 VRAMCTL_TEST_WAIT_SLICE_MS=60000
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
python3 "$VR_SRC/tests/hook/wait_test.py" || fail "see above"
finish
