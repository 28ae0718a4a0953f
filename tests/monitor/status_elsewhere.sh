#!/usr/bin/env bash
# status_elsewhere.sh - a process capped in books this reader does not read
# (#35): its registry directory is another (VRAMCTL_REGISTRY_DIR), as a
# container's /run/vramctl is. It was shown "uncapped" and doctor told the
# user to cap it; its environment says it runs under vramctl's library with
# a cap, so it is "elsewhere" (JSON: capped_elsewhere, with its books'
# directory where its environment names it), and doctor does not count it.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card
mkdir -p "$TMPDIR/other" && chmod 700 "$TMPDIR/other"
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_REGISTRY_DIR="$TMPDIR/other" LD_PRELOAD="$LIB" -- 100
"$V" status >out.table 2>err || fail "status: $(cat err)"
grep -E "^$HPID_a " out.table | grep -q uncapped && fail "shown uncapped: $(grep "^$HPID_a " out.table)"
grep -E "^$HPID_a .* elsewhere " out.table >/dev/null || fail "not elsewhere: $(cat out.table)"
"$V" status --json | python3 -c 'import json, sys
p = [p for p in json.load(sys.stdin)["processes"] if p["host_pid"] == int(sys.argv[1])][0]
assert p["state"] == "capped_elsewhere" and p["books_dir"] == sys.argv[2], p' \
	"$HPID_a" "$TMPDIR/other" || fail "status --json"
"$V" status --registry "$TMPDIR/other" >in.table 2>err
grep -E "^$HPID_a .* alive " in.table >/dev/null || fail "its own books: $(cat in.table)"
"$V" doctor >doc.out 2>&1
grep -E "^WARN +gpu.uncapped" doc.out && fail "doctor tells the user to cap it: $(cat doc.out)"
# A process without vramctl's library is still uncapped.
start_holder b -- 100
"$V" status >out.table 2>err
grep -E "^$HPID_b .* uncapped " out.table >/dev/null || fail "an uncapped one: $(cat out.table)"
stop_holder a
stop_holder b
finish
