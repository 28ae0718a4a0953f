#!/usr/bin/env bash
# status_escape - text vramctl did not write itself is escaped in every view.
# A program whose command line holds terminal escape sequences (an OSC that
# retitles the terminal, a clear-screen CSI, a C1 CSI byte, a BEL), once
# uncapped (its command line from /proc/PID/cmdline) and once capped (from
# the books): `vramctl status` and `vramctl top` show the bytes as \xNN and
# never send them to the terminal.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card

# argv[0] is the name of a link to the holder: the escapes are in it.
evil=$TMPDIR/$'x\e]0;pwned\a\e[2J\xc2\x9bholder'
ln -s "$HOLDER" "$evil"
HOLDER=$evil start_holder free -- 100
HOLDER=$evil start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=train LD_PRELOAD="$LIB" -- 300

"$V" status >"$TMPDIR/table" 2>&1
rc=$?
[ $rc = 0 ] || fail "status exited $rc"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$TMPDIR/table" && fail "a control character reached the status table"
LC_ALL=C grep -q $'\xc2\x9b' "$TMPDIR/table" && fail "a C1 control reached the status table"
n=$(grep -c 'x\\x1b]0;pwned\\x07\\x1b\[2J\\xc2\\x9bholder' "$TMPDIR/table")
[ "$n" = 2 ] || fail "expected both command lines shown escaped, found $n:$(cat "$TMPDIR/table")"

if command -v tmux >/dev/null; then
	sock=$TMPDIR/tmux.sock
	T() { tmux -S "$sock" -f /dev/null "$@"; }
	trap 'T kill-server 2>/dev/null' EXIT
	cat >"$TMPDIR/run-top" <<EOF2
#!/bin/sh
export LD_LIBRARY_PATH='$LD_LIBRARY_PATH' VRAMSIM_STATE_DIR='$VRAMSIM_STATE_DIR'
export VRAMSIM_DEVICES='$VRAMSIM_DEVICES' VRAMSIM_UUIDS='$VRAMSIM_UUIDS' VRAMSIM_NAME='$VRAMSIM_NAME'
export VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR' NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen
'$V' top -d 0.2
EOF2
	chmod +x "$TMPDIR/run-top"
	# Wide enough for every column and the whole escaped command line.
	if T new-session -d -s top -x 240 -y 30 "$TMPDIR/run-top"; then
		seen=0
		for ((i = 0; i < 200; i++)); do
			T capture-pane -p -t top >"$TMPDIR/screen" 2>/dev/null
			[ "$(grep -c 'pwned' "$TMPDIR/screen")" = 2 ] && { seen=1; break; }
			sleep 0.05
		done
		[ $seen = 1 ] || fail "top: the two command lines never showed; the screen: $(cat "$TMPDIR/screen")"
		grep -qF 'x\x1b]0;pwned\x07\x1b[2J' "$TMPDIR/screen" || fail "top: the command line is not shown escaped: $(cat "$TMPDIR/screen")"
		title=$(T display-message -p -t top '#{pane_title}')
		[ "$title" = pwned ] && fail "top let a command line retitle the terminal"
		T send-keys -t top q
	else
		echo "note: tmux cannot start a session here; top not checked"
	fi
fi
stop_holder a
stop_holder free
finish
