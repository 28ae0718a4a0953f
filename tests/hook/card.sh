#!/usr/bin/env bash
# card.sh - the cap holds on the card (#24): what NVML counts for each
# process (its context included) stays under the group's cap, with a
# realistic context (300 MiB) on the simulated GPU. Programs are the
# monitor's holder (tests/monitor/holder.c): fPCT takes PCT% of what
# cuMemGetInfo says is free, sKIB grows the context's stack.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card
unset VRAMCTL_COUNT # the default: the cap counts the card
export VRAMSIM_CONTEXT_BYTES=300M
MIB=1048576
PAGE=$((2 * MIB))
expect_grep() { grep -qF -- "$1" "$2" || fail "$3: '$1' not in: $(cat "$2")"; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: '$2', expected '$1'"; }

# NVML's figure for host PID $1 on GPU 0 (0 when not listed).
nvml_of() {
	"$V" status --json >"$TMPDIR/st.json" 2>/dev/null
	python3 - "$1" "$TMPDIR/st.json" <<'PY'
import json, sys
pid = int(sys.argv[1])
s = json.load(open(sys.argv[2]))
def walk(o):
    if isinstance(o, dict):
        if o.get("host_pid") == pid and o.get("nvml_used_bytes") is not None:
            print(o["nvml_used_bytes"]); sys.exit(0)
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(s)
print(0)
PY
}

# 1. The issue's example: two processes in one group under 1 GiB, each
# taking 90% of what it is told is free. The first sizes itself around its
# own context (it is told the cap less its context); the second's context
# does not fit in what is left: it is refused (said), so the card never
# holds more than the cap for the group (one 2 MiB page per process aside).
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g1 LD_PRELOAD="$LIB" -- f90
na=$(nvml_of "$HPID_a")
[ "$na" -ge $((900 * MIB)) ] && [ "$na" -le $((1024 * MIB + PAGE)) ] ||
	fail "example: the first process holds $na on the card"
VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g1 LD_PRELOAD="$LIB" "$HOLDER" f90 </dev/null >out 2>err
expect_grep "error: cannot start on GPU 0" out "example: the second context is refused"
expect_eq 1 "$(grep -c "a new CUDA context of this process takes 300 MiB on the card; with it the group would hold .*, over its cap (1 GiB): it is refused" err)" \
	"example: the refusal is said once"
na=$(nvml_of "$HPID_a")
[ "$na" -le $((1024 * MIB + PAGE)) ] || fail "example: the group holds $na after the refusal"
stop_holder a
# The same with a group that has room: both fit, together under the cap.
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g1b LD_PRELOAD="$LIB" -- f40
start_holder b VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g1b LD_PRELOAD="$LIB" -- f90
na=$(nvml_of "$HPID_a") nb=$(nvml_of "$HPID_b")
[ "$nb" -ge $((300 * MIB)) ] || fail "room: the second context is not on the card ($nb)"
[ $((na + nb)) -le $((1024 * MIB + 2 * PAGE)) ] ||
	fail "room: the card holds $((na + nb)) bytes for a 1 GiB group"
stop_holder a
stop_holder b

# 2. Stack growth after the cap is reached: counted, flagged, and every
# allocation refused until the group is back under its cap.
# s2: a 2 KiB stack per thread, 264 MiB more for the simulated card's
# resident threads, after the first block took all that was free.
VRAMCTL_LIMIT=1G LD_PRELOAD="$LIB" "$HOLDER" f100 s2 1 </dev/null >out 2>err
expect_grep "ready 1 " out "stack growth: the next block refused"
expect_eq 1 "$(grep -c "over its cap (1 GiB): contexts, modules and the driver's own use take" err)" \
	"stack growth: the group over its cap is said once"
expect_grep "denied 1 MiB on GPU 0: cap 1 GiB, 1.3 GiB in use on the card" err \
	"stack growth: the denial counts the card"
# What the status shows for it is the monitor's (tests/monitor).

# 3. A context larger than the cap: refused, one line.
VRAMCTL_LIMIT=256M LD_PRELOAD="$LIB" "$HOLDER" 16 32 </dev/null >out 2>err
expect_grep "error: cannot start on GPU 0" out "a context larger than the cap is refused"
expect_eq 1 "$(grep -c "takes 300 MiB on the card, over its cap (256 MiB): it is refused" err)" \
	"a context larger than the cap: said once"

# 4. The old meaning, asked for: the context is not counted.
VRAMCTL_COUNT=allocations VRAMCTL_LIMIT=256M LD_PRELOAD="$LIB" "$HOLDER" 16 32 </dev/null >out 2>err
expect_grep "ready 2 " out "--count allocations: the blocks are granted"
grep -q "more than the cap" err && fail "--count allocations: the context was counted"

# 5. NVML without per-process figures: one line, allocations counted.
VRAMSIM_NVML_UNKNOWN_USAGE=1 VRAMCTL_LIMIT=256M LD_PRELOAD="$LIB" "$HOLDER" 16 32 </dev/null >out 2>err
expect_grep "ready 2 " out "no per-process figures: allocations only"
expect_eq 1 "$(grep -c "does not tell this process's use of the card" err)" \
	"no per-process figures: said once"

# 6. NVML's figures lag (300 ms): the example still holds (a new context
# is waited for, at most a second, before it is counted).
export VRAMSIM_NVML_LAG_MS=300
start_holder la VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g3 LD_PRELOAD="$LIB" -- f90
VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g3 LD_PRELOAD="$LIB" "$HOLDER" f90 </dev/null >out 2>err
expect_grep "error: cannot start on GPU 0" out "lag: the second context is refused"
sleep 0.4 # NVML's figures catch up with the card
na=$(nvml_of "$HPID_la")
[ "$na" -ge $((900 * MIB)) ] && [ "$na" -le $((1024 * MIB + PAGE)) ] ||
	fail "lag: the first process holds $na on the card"
stop_holder la
unset VRAMSIM_NVML_LAG_MS

# 7. Kills leave no drift: a member killed, the next one gets what the
# card can give again.
for i in 1 2 3; do
	start_holder k$i VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g4 LD_PRELOAD="$LIB" -- 200
	kill_holder k$i
done
start_holder k VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g4 LD_PRELOAD="$LIB" -- f90
nk=$(nvml_of "$HPID_k")
[ "$nk" -ge $((900 * MIB)) ] && [ "$nk" -le $((1024 * MIB + PAGE)) ] ||
	fail "after kills: the card holds $nk for the only member (drift?)"
stop_holder k

# 8. Teardown and a joiner (#37): a member killed while the driver tears it
# down (NVML still lists it) counts for a process that joins the group after
# it, as it counts for a survivor, although the group's books went with
# their last member: the joiner's context is refused. Once NVML no longer
# lists it, a joiner fits. A refusal counts only when NVML listed the dead
# member both before and after it.
start_holder t VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g5 VRAMSIM_TEARDOWN_MS=4000 LD_PRELOAD="$LIB" -- 632
tpid=$HPID_t
kill_holder t
before=$(nvml_of "$tpid")
VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g5 LD_PRELOAD="$LIB" "$HOLDER" 100 </dev/null >out 2>err
after=$(nvml_of "$tpid")
if [ "$before" -gt 0 ] && [ "$after" -gt 0 ]; then
	expect_grep "error: cannot start on GPU 0" out "teardown: the joiner's context is refused"
	expect_grep "with it the group would hold 1.2 GiB, over its cap (1 GiB)" err \
		"teardown: the dead member's memory is counted"
else
	echo "note: NVML stopped listing the dead member too soon: teardown not checked"
fi
for _ in $(seq 100); do
	[ "$(nvml_of "$tpid")" = 0 ] && break
	sleep 0.1
done
VRAMCTL_LIMIT=1G VRAMCTL_GROUP=g5 LD_PRELOAD="$LIB" "$HOLDER" 100 </dev/null >out 2>err
expect_grep "ready 1 " out "teardown over: a joiner fits"
finish
