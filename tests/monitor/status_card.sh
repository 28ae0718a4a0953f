#!/usr/bin/env bash
# status_card - what the card holds (#24), end to end from real books:
# members with an overhead charge in the registry (tests/monitor/books_member:
# the registry's own calls, no driver), read back by the snapshot and shown by
# `vramctl status` in all three forms: ALLOCATED, ON CARD and OVERHEAD per
# process and group; a group whose overhead took it past its cap flagged with
# the reason; members whose caps count allocations only labelled.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
fixed_card
MEMBER=$VR_BUILD/tests/monitor/books_member
[ -x "$MEMBER" ] || skip "$MEMBER is not built"
MiB=$((1 << 20))
uuid=$VRAMSIM_UUIDS
dir=$VRAMCTL_REGISTRY_DIR
mkdir -p "$dir" && chmod 700 "$dir"

# g1, cap 1 GiB: 600 + 100 MiB allocated, 300 MiB of overhead each: 1300 MiB
# on the card, 276 MiB over the cap.
HOLDER=$MEMBER start_holder a -- "$dir" g1 "$uuid" $((1024 * MiB)) $((600 * MiB)) $((300 * MiB)) card
HOLDER=$MEMBER start_holder b -- "$dir" g1 "$uuid" $((1024 * MiB)) $((100 * MiB)) $((300 * MiB)) card
# g2, cap 4 GiB, under it: one member counting allocations as asked, one for
# want of a per-process figure.
HOLDER=$MEMBER start_holder c -- "$dir" g2 "$uuid" $((4096 * MiB)) $((200 * MiB)) 0 allocations
HOLDER=$MEMBER start_holder d -- "$dir" g2 "$uuid" $((4096 * MiB)) $((300 * MiB)) 0 no_figures

"$V" status >"$TMPDIR/t" 2>"$TMPDIR/err" || fail "status: $(cat "$TMPDIR/err")"
"$V" status --json >"$TMPDIR/j" 2>>"$TMPDIR/err" || fail "status --json: $(cat "$TMPDIR/err")"
"$V" status --format prom >"$TMPDIR/p" 2>>"$TMPDIR/err" || fail "status --format prom: $(cat "$TMPDIR/err")"

# The table: the group's row and the line that says why it is over its cap.
grep -Eq '^g1 +0 +1 GiB +700 MiB +1.3 GiB +600 MiB ' "$TMPDIR/t" ||
	fail "table: g1's ALLOCATED/ON CARD/OVERHEAD: $(grep '^g1' "$TMPDIR/t")"
grep -qF "group g1 on GPU 0: over cap on the card by 276 MiB: members' overhead (contexts, modules, driver use) 600 MiB, allocations 700 MiB" "$TMPDIR/t" ||
	fail "table: g1 not flagged over its cap: $(cat "$TMPDIR/t")"
# Its books pass the cap too (the overhead is charged in them): refused.
grep -q "cap 1 GiB); every allocation is refused until it is back under$" "$TMPDIR/t" ||
	fail "table: g1's line does not say allocations are refused"
grep -q "group g2 on GPU" "$TMPDIR/t" && fail "table: g2 flagged though under its cap"
grep -Eq "^$HPID_a .* g1 +1 GiB +600 MiB +900 MiB +300 MiB " "$TMPDIR/t" ||
	fail "table: a's ALLOCATED/ON CARD/OVERHEAD: $(grep "^$HPID_a " "$TMPDIR/t")"
grep -Eq "^$HPID_c .*allocations only \(asked\)" "$TMPDIR/t" || fail "table: c's counting not said"
grep -Eq "^$HPID_d .*allocations only \(no driver figure\)" "$TMPDIR/t" || fail "table: d's counting not said"
grep -Eq "^$HPID_a .* card " "$TMPDIR/t" || fail "table: a's counting is not 'card'"

# JSON.
python3 - "$TMPDIR/j" "$HPID_a" "$HPID_c" "$HPID_d" <<'PY' || fail "json: see above"
import json, sys
d = json.load(open(sys.argv[1]))
M = 1 << 20
g = {x["name"]: x["devices"][0] for x in d["groups"]}
p = {x["host_pid"]: x for x in d["processes"] if x["capped"]}
a, c, dd = (p[int(x)] for x in sys.argv[2:5])
checks = [
    d["schema_version"] == 2,
    g["g1"]["on_card_bytes"] == 1300 * M, g["g1"]["overhead_bytes"] == 600 * M,
    g["g1"]["allocated_bytes"] == 700 * M, g["g1"]["in_use_bytes"] == 1300 * M,
    g["g1"]["over_cap"] is True, g["g1"]["over_cap_bytes"] == 276 * M,
    "members' overhead" in g["g1"]["over_cap_reason"],
    g["g2"]["over_cap"] is False, g["g2"]["over_cap_reason"] is None,
    a["allocated_bytes"] == 600 * M, a["on_card_bytes"] == 900 * M,
    a["overhead_bytes"] == 300 * M, a["in_use_bytes"] == 900 * M, a["counting"] == "card",
    c["counting"] == "allocations", dd["counting"] == "no_figures",
]
if not all(checks):
    print([i for i, ok in enumerate(checks) if not ok], json.dumps(d["groups"], indent=1))
sys.exit(0 if all(checks) else 1)
PY

# Prometheus.
lab="group=\"g1\",gpu=\"0\",uuid=\"$uuid\""
grep -qx "vramctl_group_over_cap{$lab} 1" "$TMPDIR/p" || fail "prom: g1 over cap: $(grep over_cap "$TMPDIR/p")"
grep -qx "vramctl_group_over_cap{group=\"g2\",gpu=\"0\",uuid=\"$uuid\"} 0" "$TMPDIR/p" || fail "prom: g2 not 0"
grep -qx "vramctl_group_card_bytes{$lab} $((1300 * MiB))" "$TMPDIR/p" || fail "prom: g1 card bytes"
grep -qx "vramctl_group_overhead_bytes{$lab} $((600 * MiB))" "$TMPDIR/p" || fail "prom: g1 overhead bytes"
grep -Eq "^vramctl_process_overhead_bytes\{pid=\"$HPID_a\",.*\} $((300 * MiB))$" "$TMPDIR/p" || fail "prom: a's overhead"
grep -Eq "^vramctl_process_card_bytes\{pid=\"$HPID_a\",.*\} $((900 * MiB))$" "$TMPDIR/p" || fail "prom: a's card bytes"
grep -q "^# HELP vramctl_group_over_cap " "$TMPDIR/p" || fail "prom: no HELP for vramctl_group_over_cap"

for h in a b c d; do stop_holder $h; done
finish
