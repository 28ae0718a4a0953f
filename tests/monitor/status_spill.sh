#!/usr/bin/env bash
# status_spill - programs that spill past their cap (VRAMCTL_SPILL) on the
# simulated GPU, as status shows them: spilled bytes per process, group and
# GPU (table, JSON, Prometheus); the device's physical use never past the
# cap (NVML); one host budget for the whole group (a third member is
# denied); a member killed with SIGKILL holds its share until the group
# reclaims it; everything back to 0 when the memory is freed.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card
export VRAMCTL_COUNT=allocations # exact spill figures: the context is not in them
MiB=$((1 << 20))
SP=(VRAMCTL_LIMIT=1G VRAMCTL_SPILL=1G VRAMCTL_GROUP=sp LD_PRELOAD="$LIB")

# metric NAME LABEL-TEXT: the value of the first sample of NAME whose labels
# contain LABEL-TEXT, from $TMPDIR/out.prom ("none" when there is none).
metric() {
	local v
	v=$(grep "^$1{" "$TMPDIR/out.prom" | grep -F -- "$2" | head -1 | awk '{ print $2 }')
	echo "${v:-none}"
}
expect_metric() { # NAME LABEL-TEXT WANT WHAT
	local got
	got=$(metric "$1" "$2")
	[ "$got" = "$3" ] || fail "$4: $1{$2} is $got, expected $3"
}
snap() {
	"$V" status >"$TMPDIR/out.table" || fail "status failed"
	"$V" status --json >"$TMPDIR/out.json" || fail "status --json failed"
	"$V" status --format prom >"$TMPDIR/out.prom" || fail "status --format prom failed"
}

# a: 800 MiB on the device, 400 past the cap; b: 224 MiB left under the
# cap, so its 300 go to the host; c: 400 more would pass the 1 GiB budget.
start_holder a "${SP[@]}" -- 800 400
start_holder b "${SP[@]}" -- 300
start_holder c "${SP[@]}" -- 400
snap
expect_metric vramctl_process_spilled_bytes "pid=\"$HPID_a\"" $((400 * MiB)) "a"
expect_metric vramctl_process_used_bytes "pid=\"$HPID_a\"" $((800 * MiB)) "a"
expect_metric vramctl_process_spilled_bytes "pid=\"$HPID_b\"" $((300 * MiB)) "b"
expect_metric vramctl_process_used_bytes "pid=\"$HPID_b\"" 0 "b"
expect_metric vramctl_process_denied_total "pid=\"$HPID_c\"" 1 "c"
expect_metric vramctl_group_spilled_bytes 'group="sp",gpu="0"' $((700 * MiB)) "group"
expect_metric vramctl_group_used_bytes 'group="sp",gpu="0"' $((800 * MiB)) "group"
expect_metric vramctl_group_spill_budget_bytes 'group="sp"' $((1024 * MiB)) "group"
expect_metric vramctl_device_spilled_bytes 'gpu="0"' $((700 * MiB)) "device"
# Physically, b holds its context only (64 MiB): its 300 MiB are host memory.
expect_metric vramctl_process_nvml_used_bytes "pid=\"$HPID_b\"" $((64 * MiB)) "b on the card"
expect_metric vramctl_process_nvml_used_bytes "pid=\"$HPID_a\"" $((864 * MiB)) "a on the card"
grep -q '"spill_budget_bytes": 1073741824' "$TMPDIR/out.json" || fail "JSON: no spill budget"
grep -q '"spilled_bytes": 734003200' "$TMPDIR/out.json" || fail "JSON: no group/device spilled bytes"
head -1 "$TMPDIR/out.table" | grep -q SPILLED || fail "table: no SPILLED column for GPUs"
grep -q '^GROUP .*SPILLED' "$TMPDIR/out.table" || fail "table: no SPILLED column for groups"
grep -q '^PID .*SPILLED' "$TMPDIR/out.table" || fail "table: no SPILLED column for processes"
grep -q '700 MiB' "$TMPDIR/out.table" || fail "table: the group's 700 MiB not shown"

# kill -9 a: its record is dead, its share held until the group reclaims
# it, which a joining member does; d then finds the device free.
kill_holder a
snap
grep -q '"state": "dead"' "$TMPDIR/out.json" || fail "killed: a not shown dead"
expect_metric vramctl_group_spilled_bytes 'group="sp",gpu="0"' $((700 * MiB)) "killed, not reclaimed"
start_holder d "${SP[@]}" -- 1000
snap
expect_metric vramctl_group_spilled_bytes 'group="sp",gpu="0"' $((300 * MiB)) "reclaimed"
expect_metric vramctl_device_spilled_bytes 'gpu="0"' $((300 * MiB)) "reclaimed"
expect_metric vramctl_process_spilled_bytes "pid=\"$HPID_d\"" 0 "d on the device"
expect_metric vramctl_group_used_bytes 'group="sp",gpu="0"' $((1000 * MiB)) "d"

# Frees: everything back to 0.
stop_holder b
stop_holder c
snap
expect_metric vramctl_group_spilled_bytes 'group="sp",gpu="0"' 0 "after the frees"
expect_metric vramctl_device_spilled_bytes 'gpu="0"' 0 "after the frees"
stop_holder d
snap
# The group ends with its last member (its books go with it), or shows 0.
v=$(metric vramctl_group_used_bytes 'group="sp",gpu="0"')
[ "$v" = 0 ] || [ "$v" = none ] || fail "all stopped: the group still uses $v bytes"

# vramctl run --spill records the budget in its group.
"$V" run --limit 1G --spill=2G -- "$V" status --json >"$TMPDIR/run.json" || fail "run --spill failed"
grep -q '"spill_budget_bytes": 2147483648' "$TMPDIR/run.json" || fail "run --spill=2G: budget not in the group"
finish
