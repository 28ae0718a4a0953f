#!/usr/bin/env bash
# status_denials.sh - a group's refusals outlive its members (#35): the
# per-process counter (vramctl_process_denied_total) goes with its process;
# the group's (vramctl_group_denied_total, status --json's groups[].
# denied_count) keeps counting, from the group's books.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0
P=$VR_BUILD/tests/report/memprog
mkfifo hold
LD_PRELOAD=$LIB VRAMCTL_GROUP=gd VRAMCTL_LIMIT=1G "$P" keep 100 ready wait <hold >ready 2>/dev/null &
h=$!
exec 3>hold
for _ in $(seq 200); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
# Another member, refused twice, then gone.
LD_PRELOAD=$LIB VRAMCTL_GROUP=gd VRAMCTL_LIMIT=1G "$P" deny 2000 deny 2000 2>/dev/null ||
	fail "the refused member failed"
"$V" status --format prom >m.prom
grep -qx 'vramctl_group_denied_total{group="gd"} 2' m.prom ||
	fail "the group's counter: $(grep denied m.prom)"
"$V" status --json | jq -e '.groups[] | select(.name == "gd") | .denied_count == 2' >/dev/null ||
	fail "status --json: the group's denied_count"
exec 3>&-
wait $h
finish
