#!/usr/bin/env bash
# status_sim - `vramctl status` against the simulated GPU with real programs
# holding memory, capped (LD_PRELOAD + the environment contract) and not, in
# table, JSON and Prometheus form, compared with golden files after PIDs,
# times and paths are normalised. Scenarios: no GPU process; capped and
# uncapped processes; a capped process killed (dead record); NVML missing;
# an NVML without the v3 process call; NVML reporting usage as unknown.
# Also: --watch streams one JSON object per line.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card

# 1. No GPU process, no registry content.
status_golden sim_no_process
grep -q 'No GPU process.' "$TMPDIR/out.table" || fail "no_process: table does not say there is no GPU process"

# 2. One uncapped program, two capped ones sharing group "train" (1 GiB).
start_holder free -- 100 200
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=train LD_PRELOAD="$LIB" -- 300
start_holder b VRAMCTL_LIMIT=1G VRAMCTL_GROUP=train LD_PRELOAD="$LIB" -- 200 600
status_golden sim_capped_uncapped
# The second holder's 600 MiB would pass the cap (300 + 200 + 600 > 1024): denied once.
grep -q "\"denied_count\": 1" "$TMPDIR/out.json" || fail "capped: the denied allocation is not counted"
grep -q "uncapped" "$TMPDIR/out.table" || fail "capped: the uncapped process is not listed"

# 3. The same with an NVML that lacks nvmlDeviceGetComputeRunningProcesses_v3.
nov3=$VR_BUILD/sim/nvml-no-v3/libnvidia-ml.so.1
if [ -e "$nov3" ]; then
	status_golden sim_no_v3 VRAMCTL_NVML="$nov3"
	grep -q '"process_api": "v2"' "$TMPDIR/out.json" || fail "no_v3: the v2 call was not used"
else
	fail "$nov3 is not built"
fi

# 4. NVML reporting each process's usage as unknown (usedGpuMemory = ULLONG_MAX).
status_golden sim_memory_unknown VRAMSIM_NVML_UNKNOWN_USAGE=1
grep -q '"nvml_used_bytes": null' "$TMPDIR/out.json" || fail "unknown: usage not shown as null"
grep -q '"nvml_used_bytes": 18446744073709551615' "$TMPDIR/out.json" && fail "unknown: ULLONG_MAX shown as a number"

# 5. No NVML at all: the registry's view alone, and a note that says so.
status_golden sim_nvml_missing VRAMCTL_NVML=/nonexistent/libnvidia-ml.so.1
grep -q 'NVML not found' "$TMPDIR/out.table" || fail "nvml_missing: no note"

# 6. A capped process killed: its record is shown dead, its numbers kept.
kill_holder b
status_golden sim_vanished
grep -q '"state": "dead"' "$TMPDIR/out.json" || fail "vanished: the killed process is not marked dead"

# A capped program in its own PID namespace (a container): it is PID 1 there;
# status shows both PIDs, the host one found by the registry, and joins it
# with NVML's row, which lists host PIDs (the simulated NVML, like the real
# one, reports the host PID: NSpid's first entry with the host's /proc).
# Needs unshare(1) and the right to make a PID namespace.
if command -v python3 >/dev/null && unshare -p -f --kill-child true 2>/dev/null; then
	HOLD_PREFIX="unshare -p -f --kill-child" start_holder ctr VRAMCTL_LIMIT=1G VRAMCTL_GROUP=ctr LD_PRELOAD="$LIB" -- 100
	[ "$HPID_ctr" = 1 ] || fail "namespace: the holder is not PID 1 in its namespace ($HPID_ctr)"
	"$V" status --json >"$TMPDIR/ns.json"
	python3 - "$TMPDIR/ns.json" <<'PY' || fail "namespace: wrong PIDs (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["group"] == "ctr"]
ok = len(rows) == 1 and rows[0]["ns_pid"] == 1 and rows[0]["host_pid"] not in (None, 1) \
    and rows[0]["state"] == "alive" and rows[0]["nvml_listed"] is True
# ...and is never listed a second time as an uncapped process.
ok = ok and not [p for p in d["processes"]
                 if not p["capped"] and p["host_pid"] == rows[0]["host_pid"]]
if not ok:
    print(json.dumps(rows, indent=1))
sys.exit(0 if ok else 1)
PY
	stop_holder ctr
	unset HPID_ctr
	unset 'HOLD_BG[ctr]'
else
	echo "note: PID-namespace check skipped (no unshare, no python3, or not allowed)"
fi

# 7. A capped process killed and reaped while the driver still tears it down
# (the simulator keeps it for VRAMSIM_TEARDOWN_MS): shown exiting, with
# NVML's usage, never as an uncapped process of its own; the group, whose
# other member lives on, keeps its bytes.
start_holder tdlive VRAMCTL_LIMIT=1G VRAMCTL_GROUP=td LD_PRELOAD="$LIB" -- 100
start_holder td VRAMCTL_LIMIT=1G VRAMCTL_GROUP=td VRAMSIM_TEARDOWN_MS=600000 LD_PRELOAD="$LIB" -- 300
td_pid=$HPID_td
kill_holder td
"$V" status --json >"$TMPDIR/td.json"
"$V" status >"$TMPDIR/td.table"
"$V" status --format prom >"$TMPDIR/td.prom"
grep -q '"state": "exiting"' "$TMPDIR/td.json" || fail "exiting: the killed process is not shown exiting"
grep -q '"exiting_members": 1' "$TMPDIR/td.json" || fail "exiting: the group does not count it"
grep -Eq "^$td_pid .* exiting +td " "$TMPDIR/td.table" || fail "exiting: not in the table"
grep -q '^vramctl_exiting_records 1$' "$TMPDIR/td.prom" || fail "exiting: not in the metrics"
grep -q '"state": "uncapped"' "$TMPDIR/td.json" && grep -B8 '"state": "uncapped"' "$TMPDIR/td.json" |
	grep -q "\"host_pid\": $td_pid," && fail "exiting: listed again as an uncapped process"
# vramctl run joining the group asks NVML too: the record stays.
"$V" run --limit 1G --group td -- true 2>"$TMPDIR/td.run" || fail "exiting: vramctl run failed: $(cat "$TMPDIR/td.run")"
"$V" status --json >"$TMPDIR/td2.json"
grep -q '"state": "exiting"' "$TMPDIR/td2.json" || fail "exiting: vramctl run's join gave the dead member's share back"
unset HPID_td
unset 'HOLD_BG[td]'
stop_holder tdlive

# --watch into a pipe: one JSON object per line, as long as the reader reads.
"$V" status --watch 0.05 2>"$TMPDIR/werr" | head -n 3 >"$TMPDIR/watch"
[ "$(wc -l <"$TMPDIR/watch")" = 3 ] || fail "watch: expected 3 lines, got $(wc -l <"$TMPDIR/watch")"
if command -v python3 >/dev/null; then
	while IFS= read -r line; do
		printf '%s' "$line" | python3 -m json.tool >/dev/null || fail "watch: a line is not JSON"
	done <"$TMPDIR/watch"
fi

# --watch as a table (#35, Low: it streamed JSON only): each table under
# the time it was read; on a terminal (script(1)'s) redrawn in place, and
# that without --format; Prometheus text is export's, refused.
"$V" status --watch 0.05 --format table 2>"$TMPDIR/werr" | head -n 40 >"$TMPDIR/watch"
[ "$(grep -c '^vramctl status --watch 0.05 s  [0-9-]* [0-9:]* UTC$' "$TMPDIR/watch")" -ge 2 ] ||
	fail "watch --format table: not two tables under their times: $(cat "$TMPDIR/watch")"
grep -q '^GPU  NAME' "$TMPDIR/watch" || fail "watch --format table: no table: $(cat "$TMPDIR/watch")"
if command -v script >/dev/null; then
	timeout 2 script -qfc "'$V' status --watch 0.1" /dev/null >"$TMPDIR/tty" 2>&1 </dev/null
	grep -q $'\e\[H\e\[2Jvramctl status --watch' "$TMPDIR/tty" ||
		fail "watch on a terminal: no table redrawn in place: $(head -c 300 "$TMPDIR/tty" | cat -v)"
	grep -q '^GPU  NAME' "$TMPDIR/tty" || fail "watch on a terminal: no table"
fi
"$V" status --watch --format prom >/dev/null 2>"$TMPDIR/e0"
[ $? = 125 ] || fail "--watch --format prom: expected exit 125"
grep -q "vramctl export" "$TMPDIR/e0" || fail "--watch --format prom: $(cat "$TMPDIR/e0")"

# Usage errors: status 125 and a message naming the bad text.
"$V" status --format yaml >/dev/null 2>"$TMPDIR/e1"
[ $? = 125 ] || fail "bad --format: expected exit 125"
grep -q "yaml" "$TMPDIR/e1" || fail "bad --format: message does not name it"
"$V" status --watch 0 >/dev/null 2>&1
[ $? = 125 ] || fail "--watch 0: expected exit 125"

stop_holder free
stop_holder a
finish
