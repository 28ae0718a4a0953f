#!/usr/bin/env bash
# park.sh - parking (#36, --park-idle, vramctl park/unpark) on the
# simulated card, whose checkpoint API behaves as the real driver's:
#   1. a member idle for its --park-idle time is parked: its group's books
#      and the card (NVML) no longer count its 600 MiB, status shows it
#      parked with its bytes on the host; its next driver call (one
#      vramctl does not wrap) brings it back, the bytes it wrote intact;
#      the same for a program that gets those entry points through
#      cuGetProcAddress (as cudart does) instead of dlsym;
#   2. parked, its room is another member's; its next call waits for room
#      (--wait) and, none coming, fails with out-of-memory, said; once the
#      room is back the call after it restores it;
#   3. a restore the card has no room for (a process outside vramctl took
#      it) fails that call, said; it stays parked and comes back later;
#   4. killed while parked: its group's books and park budget read zero;
#   5. `vramctl park` and `unpark` (PID and group), refused for a busy
#      process and one without --park-idle; a park budget too small;
#      a process that keeps its own books, runs on a driver without the
#      checkpoint API (before CUDA 12.8) or used managed memory (which the
#      checkpoint does not support) is never parked, said;
#   6. a guarantee that does not fit on the card (an idle borrower holds
#      its room) has the borrower parked, is given, and its group is
#      served; nobody killed.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (its checkpoint API)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
python3 "$VR_SRC/tests/hook/park_test.py" || fail "see above"
finish
