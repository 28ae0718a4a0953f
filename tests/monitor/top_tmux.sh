#!/usr/bin/env bash
# top_tmux - `vramctl top` in a real terminal (tmux): start, rows for capped
# and uncapped programs with ALLOC, ON CARD and OVERHEAD, spilled bytes (GPU
# line, SPILLED column), a GPU's guarantees (#26), sort,
# reverse, filter (the header counts the rows shown), help, resize (down to a
# tiny terminal and back; a line cut at the edge ends in '~'), quit; and with an NVML that does not answer, the
# screen still comes up and quits at once. The screen is read with capture-pane and polled
# for the expected text a bounded number of times; nothing waits on time.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
command -v tmux >/dev/null || skip "tmux is not installed (Debian package tmux)"
fixed_card

start_holder free -- 100 200
# a spills past its cap (--spill): 300 MiB on the GPU, 900 on the host.
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_SPILL=1G VRAMCTL_GROUP=train LD_PRELOAD="$LIB" -- 300 900
# b holds a guarantee (#26): the line under the GPU's says so.
start_holder b VRAMCTL_LIMIT=2G VRAMCTL_GUARANTEE=1G VRAMCTL_GROUP=infer LD_PRELOAD="$LIB" -- 700
start_holder c VRAMCTL_LIMIT=3G VRAMCTL_GROUP=run-1067-5df5a3a6 LD_PRELOAD="$LIB" -- 300

sock=$TMPDIR/tmux.sock
T() { tmux -S "$sock" -f /dev/null "$@"; }
cleanup() { T kill-server 2>/dev/null; }
trap cleanup EXIT

# The pane runs top with this test's environment and records its exit status.
cat >"$TMPDIR/run-top" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH='$LD_LIBRARY_PATH' VRAMSIM_STATE_DIR='$VRAMSIM_STATE_DIR'
export VRAMSIM_DEVICES='$VRAMSIM_DEVICES' VRAMSIM_UUIDS='$VRAMSIM_UUIDS' VRAMSIM_NAME='$VRAMSIM_NAME'
export VRAMSIM_CONTEXT_BYTES='$VRAMSIM_CONTEXT_BYTES' VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR'
export VRAMCTL_DEVICE_DIR='$VRAMCTL_DEVICE_DIR'
export NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen
'$V' top -d 0.2
echo \$? >'$TMPDIR/top.rc'
EOF
chmod +x "$TMPDIR/run-top"
T new-session -d -s top -x 120 -y 30 "$TMPDIR/run-top" || skip "tmux cannot start a session here"

screen() { T capture-pane -p -t top 2>/dev/null; }

# poll_screen TEXT GREP_STATUS: polls the screen (at most 200 times) until
# grep for the fixed string TEXT exits with GREP_STATUS (0: the text is on
# the screen, 1: it is not); returns 1 if that never happened.
poll_screen() {
	local i
	for ((i = 0; i < 200; i++)); do
		screen >"$TMPDIR/screen"
		grep -qF -- "$1" "$TMPDIR/screen"
		[ $? = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_for TEXT WHAT: polls the screen for a fixed string.
wait_for() {
	poll_screen "$1" 0 && return 0
	fail "$2: '$1' never appeared; the screen:"
	sed 's/^/      | /' "$TMPDIR/screen" >&2
	return 1
}

# wait_gone TEXT WHAT: the same until the text is no longer on the screen.
wait_gone() {
	poll_screen "$1" 1 && return 0
	fail "$2: '$1' is still on the screen"
	sed 's/^/      | /' "$TMPDIR/screen" >&2
	return 1
}

# quit_top TRIES WHAT: sends 'q' and waits (at most TRIES polls 50 ms apart)
# for top's exit status, which must be 0.
quit_top() {
	local i
	T send-keys -t top q
	for ((i = 0; i < $1; i++)); do
		[ -s "$TMPDIR/top.rc" ] && break
		sleep 0.05
	done
	[ "$(cat "$TMPDIR/top.rc" 2>/dev/null)" = 0 ] || fail "$2"
}

# The PIDs of the process rows, top to bottom.
row_pids() { screen | awk '/^[0-9]+ +[0-9-] /{ print $1 }'; }

wait_for "vramctl top" "start"
wait_for "GPU 0 vramsim test GPU" "GPU line"
wait_for "train" "capped row"
wait_for "infer" "second group's row"
wait_for "(uncapped)" "uncapped row"
# A group name wider than its column: cut, marked, and a space before the
# next column's value (it once read "run-1067-5d300 MiB").
wait_for "run-1067-~ 300 MiB" "long group name cut with a marker"
grep -q "run-1067-5d" "$TMPDIR/screen" && fail "long group name runs into the next column"
# NO_COLOR: bars are drawn with characters: the 700 MiB of a 2 GiB cap.
grep -E "infer .*\[###" "$TMPDIR/screen" >/dev/null || fail "no '#' bar for the infer row under NO_COLOR"
# Spilled bytes: on the GPU's line and in the process's SPILLED column.
wait_for "spilled 900 MiB" "the GPU line's spilled bytes"
wait_for "GPU 0: guarantees 1 GiB (" "the GPU's guarantees"
wait_for "held by: infer (uid $(id -u)) 1 GiB, " "who holds the guarantee"
# ALLOC, ON CARD (the simulated 64 MiB context beside it), OVERHEAD, CAP,
# PEAK (never below ON CARD), SPILLED.
grep -E "train +300 MiB +364 MiB +64 MiB +1 GiB +364 MiB +900 MiB" "$TMPDIR/screen" >/dev/null ||
	fail "no ALLOC/ON CARD/OVERHEAD or SPILLED figure in the train row"

# Sort by PID, then reverse.
T send-keys -t top p
wait_for "PIDv" "sort by PID"
row_pids >"$TMPDIR/pids"
sort -n "$TMPDIR/pids" | cmp -s - "$TMPDIR/pids" || fail "rows not in PID order: $(tr '\n' ' ' <"$TMPDIR/pids")"
[ "$(wc -l <"$TMPDIR/pids")" = 4 ] || fail "expected 4 rows, got $(wc -l <"$TMPDIR/pids")"
T send-keys -t top r
wait_for "PID^" "reverse"
row_pids >"$TMPDIR/pids"
sort -rn "$TMPDIR/pids" | cmp -s - "$TMPDIR/pids" || fail "rows not in reverse PID order"
T send-keys -t top r G
wait_for "GROUPv" "sort by group"
T send-keys -t top '>'
wait_for "ALLOCv" "next column"
T send-keys -t top S
wait_for "SPILLEDv" "sort by spilled"

# Filter by group.
T send-keys -t top /
wait_for "filter (user, container or group" "filter prompt"
T send-keys -t top i n f e r Enter
wait_for "filter: infer" "filter shown"
wait_gone "train " "rows of other groups hidden"
[ "$(row_pids | wc -l)" = 1 ] || fail "filter: expected 1 row"
# The header counts the rows shown, of how many (it said 4) (#35, Low).
screen | head -1 | grep -qF "1 of 4 process rows" || fail "filter: the header's count: $(screen | head -1)"
T send-keys -t top Escape
wait_for "train" "filter cleared"

# Help, closed by any key.
T send-keys -t top '?'
wait_for "vramctl top - keys" "help"
T send-keys -t top x
wait_gone "vramctl top - keys" "help closed"

# 60 columns (#25): the GPU line whole (no bar drawn over it), and the
# COMMAND column kept (optional columns go first).
T resize-window -t top -x 60 -y 30
wait_for "COMMAND" "60 columns: COMMAND kept"
screen >"$TMPDIR/screen"
grep -qE "^GPU 0 vramsim.* caps [0-9.]+ [KMGT]?i?B" "$TMPDIR/screen" ||
	fail "60 columns: the GPU line is overwritten: $(grep '^GPU' "$TMPDIR/screen")"
grep -qE "^[0-9]+ +0 .* /" "$TMPDIR/screen" || fail "60 columns: no command shown: $(cat "$TMPDIR/screen")"
# A line cut at the screen's edge ends in '~' (the guarantees' line was cut
# silently) (#35, Low).
[ "$(grep '^  GPU 0: guarantees' "$TMPDIR/screen" | cut -c60)" = "~" ] ||
	fail "60 columns: a line cut without a mark: '$(grep '^  GPU 0: guarantees' "$TMPDIR/screen")'"

# Resize: small, tiny, back.
T resize-window -t top -x 40 -y 8
wait_for "vramctl top" "small terminal"
T resize-window -t top -x 12 -y 3
wait_for "vramctl to" "tiny terminal"
T resize-window -t top -x 120 -y 30
wait_for "(uncapped)" "back to full size"

# Quit.
quit_top 200 "top did not quit with status 0 on 'q'"

# NVML that answers after 60 s (the simulator's VRAMSIM_SLOW): the screen
# still comes up with the registry's rows at once and says it is waiting,
# and 'q' quits at once; the collector thread is left behind in NVML.
sed -i "s|^export NO_COLOR=1|export VRAMSIM_SLOW=nvmlDeviceGetCount_v2:60000000 NO_COLOR=1|" "$TMPDIR/run-top"
rm -f "$TMPDIR/top.rc"
T kill-server 2>/dev/null
T new-session -d -s top -x 120 -y 30 "$TMPDIR/run-top" || fail "tmux: second session"
wait_for "waiting for NVML's first answer" "slow NVML: note"
wait_for "infer" "slow NVML: registry rows shown"
screen >"$TMPDIR/screen"
grep -q "GPU 0 vramsim" "$TMPDIR/screen" && fail "slow NVML: GPU line shown, so NVML was not slow"
grep -qF "waiting for NVML's first answer" "$TMPDIR/screen" || fail "slow NVML: note gone"
quit_top 100 "slow NVML: top did not quit at once on 'q'"

stop_holder free
stop_holder a
stop_holder b
stop_holder c
finish
