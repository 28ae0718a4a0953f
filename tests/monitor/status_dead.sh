# status_dead.sh - a member killed with SIGKILL shows as a dead row whose
# PID cell says the process is gone, not "-" beside its NSPID as if the
# PID were merely unknown (#25).
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=dg LD_PRELOAD="$LIB" -- 100
start_holder b VRAMCTL_LIMIT=1G VRAMCTL_GROUP=dg LD_PRELOAD="$LIB" -- 200
kill -9 "${HOLD_BG[b]}"
wait "${HOLD_BG[b]}" 2>/dev/null
"$V" status >table 2>err || fail "status: exit $?: $(cat err)"
row=$(awk -v p="$HPID_b" '$2 == p && $4 == "dead"' table)
[ -n "$row" ] || fail "no dead row for $HPID_b: $(cat table)"
case $row in
"- "*) fail "the dead row shows PID '-' beside its NSPID: $row" ;;
"gone "*) ;;
*) fail "the dead row: $row" ;;
esac
stop_holder a
finish
