# status_users.sh - true statements about who is capped, with two users
# (root and the suite's vrslurm), each a failure of #37 before:
#
#  8  a capped process that keeps its own books because its group's
#     directory is another user's is shown capped, alone and why (status
#     table and JSON, export's vramctl_process_own_books), not uncapped;
#  9  a capped process of vrslurm's in a user namespace of its own
#     (`unshare -Ur`: it is uid 0 there) is shown as vrslurm's, not root's;
# 11  books vrslurm can write that name root's process (PID and start time,
#     which anyone can read) do not make it capped: it stays uncapped;
# 12  a damaged ring of cap changes (a count of 2^64 - 1, a change of
#     garbage) is said to be damaged, never printed as changes.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
[ "$(id -u)" = 0 ] || skip "needs root (a second user)"
OTHER=${VR_SLURM_USER:-vrslurm}
id "$OTHER" >/dev/null 2>&1 || skip "no user $OTHER"
command -v setpriv >/dev/null && command -v unshare >/dev/null || skip "needs setpriv and unshare"
POKE=$VR_BUILD/tests/cli/regpoke
[ -x "$POKE" ] || skip "$POKE is not built"
fixed_card
OUID=$(id -u "$OTHER")
OGID=$(id -g "$OTHER")
AS_OTHER="setpriv --reuid=$OUID --regid=$OGID --clear-groups"
U=$VRAMSIM_UUIDS

# What the other user reaches: its books directories, a simulated card of
# its own (the simulator keeps a card's state in a directory of its user's;
# root's status reads the books, not that card's NVML), the device books.
S=$(mktemp -d /tmp/vramctl-users.XXXXXX)
chmod 0755 "$S"
mkdir -m 0777 "$S/dev"
mkdir -m 0700 "$S/sim"
chown "$OUID:$OGID" "$S/sim"
export VRAMCTL_DEVICE_DIR=$S/dev
books() {
	mkdir -m 0700 "$S/$1"
	chown "$OUID:$OGID" "$S/$1"
	echo "$S/$1"
}
# json FILE EXPR: a Python expression on the JSON d, true or the test fails.
json() {
	python3 - "$1" "$2" <<'PY' || fail "$2"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["processes"]
def row(pid):
    return next((r for r in rows if r.get("host_pid") == int(pid)), None)
ok = eval(sys.argv[2])
if not ok:
    print(json.dumps(rows, indent=1)[:3000], file=sys.stderr)
    print("notes:", d["notes"], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# 9. vrslurm's program in its own user namespace: root there, vrslurm on
# the host.
D9=$(books ns)
HOLD_PREFIX="$AS_OTHER unshare -Ur" start_holder ns VRAMSIM_STATE_DIR="$S/sim" \
	VRAMCTL_LIMIT=1G VRAMCTL_GROUP=nsjob \
	VRAMCTL_REGISTRY_DIR="$D9" LD_PRELOAD="$LIB" -- 100 || finish
"$V" status --registry "$D9" --json >out9 2>err || fail "status (9): $(cat err)"
json out9 "row($HPID_ns) and row($HPID_ns)['capped'] and row($HPID_ns)['uid'] == $OUID and row($HPID_ns)['user'] == '$OTHER'"
json out9 "d['groups'][0]['owner_uid'] == $OUID"

# 8. root's capped program whose group's directory is vrslurm's: it keeps
# its own books; shown capped, alone, and why.
D8=$(books solo)
start_holder alone VRAMCTL_LIMIT=1G VRAMCTL_GROUP=solo VRAMCTL_REGISTRY_DIR="$D8" \
	LD_PRELOAD="$LIB" -- 100 || finish
"$V" status --registry "$D8" --json >out8 2>err || fail "status (8): $(cat err)"
json out8 "row($HPID_alone)['capped'] and row($HPID_alone)['state'] == 'alive' and row($HPID_alone)['own_books'] and row($HPID_alone)['group'] == 'solo' and row($HPID_alone)['cap_bytes'] == 1 << 30"
json out8 "row($HPID_alone)['in_use_bytes'] >= 100 << 20 and 'cannot join group solo' in row($HPID_alone)['own_books_reason'] and 'owned by uid $OUID' in row($HPID_alone)['own_books_reason']"
"$V" status --registry "$D8" >tab8 2>err || fail "status table (8): $(cat err)"
grep -qE "^$HPID_alone .* alone +solo +1 GiB" tab8 || fail "the table's row (8): $(grep -E "^$HPID_alone " tab8)"
grep -q "^pid $HPID_alone keeps its own books (group solo): its cap holds for it alone" tab8 ||
	fail "the table's line (8): $(cat tab8)"
start_export --registry "$D8"
scrape "$PORT" metrics8 || fail "cannot scrape export"
grep -q "^vramctl_process_own_books{pid=\"$HPID_alone\",.*group=\"solo\".*} 1$" metrics8 ||
	fail "export's own-books series (8): $(grep -E "own_books|pid=\"$HPID_alone\"" metrics8)"
grep -q "^vramctl_process_used_bytes{pid=\"$HPID_alone\"," metrics8 ||
	fail "export lists the process's books (8)"
kill -TERM "$XPID"
wait "$XPID"

# 11. Books vrslurm can write naming root's process: a member of vrslurm's
# group that says, in its own slot, that it is root's process (PID and
# start time from /proc) and holds no PID lock. Root's process stays
# uncapped; the claim is not believed.
start_holder victim -- 100 || finish
D11=$(books claim)
HOLDER=$POKE HOLD_PREFIX="$AS_OTHER" start_holder forger -- "$D11" evil claim "$HPID_victim" "$U" ||
	finish
"$V" status --registry "$D11" --json >out11 2>err || fail "status (11): $(cat err)"
json out11 "row($HPID_victim) and not row($HPID_victim)['capped'] and row($HPID_victim)['state'] == 'uncapped'"
json out11 "not [r for r in rows if r.get('group') == 'evil' and r.get('host_pid') == $HPID_victim]"

# 12. The ring of cap changes of vrslurm's group overwritten: said damaged,
# no count or caps read from it.
$AS_OTHER "$POKE" "$D11" evil ring || fail "regpoke ring"
"$V" status --registry "$D11" >tab12 2>err || fail "status (12): $(cat err)"
grep -q "damaged: its record of cap changes was overwritten" tab12 ||
	fail "the damaged ring is not said: $(cat tab12)"
! grep -q "cap changed" tab12 || fail "a damaged ring printed as changes: $(grep 'cap changed' tab12)"
"$V" status --registry "$D11" --json >out12 2>err || fail "status --json (12)"
json out12 "d['groups'][0]['cap_changes_total'] == 0 and d['groups'][0]['cap_changes'] == []"

stop_holder forger
stop_holder victim
stop_holder alone
stop_holder ns
rm -rf "$S"
finish
