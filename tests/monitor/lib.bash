# tests/monitor/lib.bash - helpers for the monitor's shell tests (sourced,
# not a test itself). Programs are synchronised through pipes: a holder says
# "ready N PID" once its memory is allocated and frees it when its stdin
# closes; nothing waits on time.
. "$VR_SRC/tests/lib.bash"
HOLDER=$VR_BUILD/tests/monitor/holder
GOLDEN=$VR_SRC/tests/monitor/golden

skip() {
	echo "skipped: $*"
	exit 77
}

require_sim() {
	[ "${VR_TEST_DRIVER:-sim}" = sim ] || skip "needs the simulated GPU (fixed sizes and names)"
	[ -e "$VR_BUILD/sim/libnvidia-ml.so.1" ] || skip "the simulated NVML is not built"
	[ -x "$HOLDER" ] || skip "$HOLDER is not built"
}

# A fixed simulated card, so outputs can be compared with golden files.
fixed_card() {
	export VRAMSIM_DEVICES=16G
	export VRAMSIM_UUIDS=GPU-0e0e0e0e-1111-2222-3333-444444444444
	export VRAMSIM_NAME="vramsim test GPU"
	export VRAMSIM_CONTEXT_BYTES=$((64 << 20))
	unset VRAMCTL_NVML VRAMSIM_NVML_UNKNOWN_USAGE
	# The views as users see them: the cap counts the card (tests/run
	# sets VRAMCTL_COUNT=allocations for the rest of the suite).
	unset VRAMCTL_COUNT
}

# In a child started in the background: drops the holders' pipe ends, so
# that closing a holder's stdin still reaches it (call in a subshell).
close_holder_fds() {
	local fd
	for fd in "${HOLD_W[@]}"; do
		exec {fd}>&-
	done
}

# start_holder NAME [ENV=VALUE...] -- MIB...: starts a holder, waits for its
# "ready" line; sets HPID_<NAME> to its PID (as it sees itself) and keeps its
# stdin open. HOLD_PREFIX, when set, is a command the holder runs under
# (e.g. unshare).
declare -A HOLD_W HOLD_BG
start_holder() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	local in=$TMPDIR/hold-$name.in out=$TMPDIR/hold-$name.out
	mkfifo "$in" "$out"
	# The child must not inherit the other holders' pipe ends, or closing
	# one holder's stdin would not reach it.
	(
		close_holder_fds
		exec ${HOLD_PREFIX:-} env "${envs[@]}" "$HOLDER" "$@" <"$in" >"$out"
	) &
	HOLD_BG[$name]=$!
	local w r line
	exec {w}>"$in"
	exec {r}<"$out"
	HOLD_W[$name]=$w
	if ! read -r -t 20 -u "$r" line; then
		fail "holder $name did not start"
		return 1
	fi
	exec {r}<&-
	case $line in
	ready\ *) ;;
	*)
		fail "holder $name: $line"
		return 1
		;;
	esac
	printf -v "HPID_$name" '%s' "${line##* }"
}

# stop_holder NAME: closes its stdin (it frees and exits) and waits for it.
stop_holder() {
	local w=${HOLD_W[$1]}
	exec {w}>&-
	wait "${HOLD_BG[$1]}" 2>/dev/null
}

# kill_holder NAME: SIGKILL, as a crash would.
kill_holder() {
	kill -KILL "${HOLD_BG[$1]}"
	wait "${HOLD_BG[$1]}" 2>/dev/null
	local w=${HOLD_W[$1]}
	exec {w}>&-
}

# Replaces what changes from run to run: PIDs, times, paths, user names.
normalise() {
	local args=() n
	for n in "${!HOLD_BG[@]}"; do
		local v=HPID_$n
		[ -n "${!v:-}" ] && args+=(-e "s/\\b${!v}\\b/<pid-$n>/g")
	done
	args+=(-e "s|$VR_BUILD|<build>|g" -e "s|$VRAMCTL_REGISTRY_DIR|<registry>|g")
	args+=(-e 's/"time_ms": [0-9]*/"time_ms": <time>/')
	args+=(-e "s/\"uid\": $(id -u)\\b/\"uid\": <uid>/" -e "s/\"owner_uid\": $(id -u)\\b/\"owner_uid\": <uid>/")
	args+=(-e "s/\\b$(id -un)\\b/<user>/g")
	# A runner that is itself in a container (or a pod) sees its own
	# container ID and pod UID on every process it starts; the goldens are
	# written outside any: those are taken out.
	local cid pod
	cid=$(grep -oE '[0-9a-f]{64}' /proc/self/cgroup 2>/dev/null | tail -n 1)
	pod=$(grep -oE 'pod[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}' /proc/self/cgroup 2>/dev/null | tail -n 1 | tr _ -)
	pod=${pod#pod}
	if [ -n "$cid" ]; then
		args+=(-e "s/\"container_id\": \"$cid\"/\"container_id\": null/" -e "s/,container_id=\"$cid\"//")
		args+=(-e "s/ CONTAINER / /" -e "s/ ${cid:0:12} / /")
	fi
	[ -n "$pod" ] && args+=(-e "s/\"pod_uid\": \"$pod\"/\"pod_uid\": null/" -e "s/,pod_uid=\"$pod\"//")
	sed "${args[@]}"
}

# golden NAME FILE: compares FILE with $GOLDEN/NAME (VR_UPDATE_GOLDEN=1 writes it).
golden() {
	if [ -n "${VR_UPDATE_GOLDEN:-}" ]; then
		cp "$2" "$GOLDEN/$1"
		echo "wrote $GOLDEN/$1"
		return
	fi
	if ! diff -u "$GOLDEN/$1" "$2" >"$TMPDIR/diff" 2>&1; then
		fail "$1 differs from its golden file:"
		cat "$TMPDIR/diff" >&2
	fi
}

# status_golden NAME [ENV=VALUE...]: vramctl status in all three formats,
# normalised, against golden files NAME.{table,json,prom}.
status_golden() {
	local name=$1
	shift
	env "$@" "$V" status >"$TMPDIR/out.table" 2>"$TMPDIR/err" || fail "$name: status failed: $(cat "$TMPDIR/err")"
	env "$@" "$V" status --json >"$TMPDIR/out.json" 2>>"$TMPDIR/err" || fail "$name: status --json failed"
	env "$@" "$V" status --format prom >"$TMPDIR/out.prom" 2>>"$TMPDIR/err" || fail "$name: status --format prom failed"
	[ -s "$TMPDIR/err" ] && fail "$name: status wrote to stderr: $(cat "$TMPDIR/err")"
	if command -v python3 >/dev/null; then
		python3 -m json.tool "$TMPDIR/out.json" >/dev/null || fail "$name: --json is not valid JSON"
	fi
	# Column widths follow the PIDs' lengths: compare tables with blanks squeezed.
	normalise <"$TMPDIR/out.table" | tr -s ' ' >"$TMPDIR/n.table"
	normalise <"$TMPDIR/out.json" >"$TMPDIR/n.json"
	normalise <"$TMPDIR/out.prom" >"$TMPDIR/n.prom"
	golden "$name.table" "$TMPDIR/n.table"
	golden "$name.json" "$TMPDIR/n.json"
	golden "$name.prom" "$TMPDIR/n.prom"
}

# start_export [ARG...]: `vramctl export --listen 127.0.0.1:0 ARG...` in the
# background (the holders' pipe ends closed in it). Sets XPID, its first
# line LINE, PORT, and XR: the fd its stdout is read from, kept open (a
# closed pipe would end it at its next line). Ends the test when it prints
# nothing within 20 s.
start_export() {
	rm -f "$TMPDIR/exp.out"
	mkfifo "$TMPDIR/exp.out"
	(
		close_holder_fds
		exec "$V" export --listen 127.0.0.1:0 "$@" >"$TMPDIR/exp.out" 2>"$TMPDIR/exp.err"
	) &
	XPID=$!
	exec {XR}<"$TMPDIR/exp.out"
	read -r -t 20 -u "$XR" LINE || {
		fail "export printed nothing: $(cat "$TMPDIR/exp.err")"
		finish
	}
	PORT=${LINE##*:}
	PORT=${PORT%%/*}
}

# scrape PORT OUT: HTTP/1.0 GET /metrics of the exporter on 127.0.0.1:PORT;
# the body goes to OUT (the whole answer to OUT.raw). 1 when it cannot connect.
scrape() {
	local fd
	exec {fd}<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&"$fd"
	cat <&"$fd" >"$2.raw"
	exec {fd}<&-
	awk 'BEGIN { body = 0 } body { print; next } /^\r?$/ { body = 1 }' "$2.raw" >"$2"
}
