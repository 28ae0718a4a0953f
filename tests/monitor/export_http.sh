#!/usr/bin/env bash
# export_http - `vramctl export` scraped over HTTP (a bash /dev/tcp client,
# so curl is not needed): /metrics answers 200 with the Prometheus text of a
# capped and an uncapped program, / where the metrics are, other paths 404, SIGTERM stops it with
# status 0, a bad --listen is refused. The scrape is validated with
# `promtool check metrics` (Debian's prometheus package); without promtool
# the other checks still run and the test then skips, saying so. promtool
# also checks every golden Prometheus output of the formatter.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card

start_holder free -- 100
start_holder a VRAMCTL_LIMIT=1G VRAMCTL_GROUP=train LD_PRELOAD="$LIB" -- 300

start_export
xpid=$XPID xr=$XR line=$LINE
case $line in
"vramctl: serving http://127.0.0.1:"*/metrics) ;;
*) fail "unexpected first line: $line" ;;
esac
port=${line##*:}
port=${port%%/*}

# get PATH OUT: HTTP/1.0 GET; the status code is echoed, the body goes to OUT.
get() {
	local fd
	exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&"$fd"
	cat <&"$fd" >"$2.raw"
	exec {fd}<&-
	# Split the head from the body at the first empty line.
	awk 'BEGIN { body = 0 } body { print; next } /^\r?$/ { body = 1 }' "$2.raw" >"$2"
	head -n 1 "$2.raw" | awk '{ print $2 }'
}

code=$(get /metrics "$TMPDIR/metrics")
[ "$code" = 200 ] || fail "/metrics: HTTP $code"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$TMPDIR/metrics.raw" || fail "/metrics: wrong Content-Type"
for want in 'vramctl_build_info{version="' 'vramctl_nvml_up 1' 'vramctl_device_memory_total_bytes{gpu="0",uuid="GPU-0e0e0e0e-1111-2222-3333-444444444444"} 17179869184' \
	'vramctl_group_limit_bytes{group="train",gpu="0",uuid="GPU-0e0e0e0e-1111-2222-3333-444444444444"} 1073741824' \
	"vramctl_process_used_bytes{pid=\"$HPID_a\"" "vramctl_process_nvml_used_bytes{pid=\"$HPID_free\"" \
	'# TYPE vramctl_process_denied_total counter'; do
	grep -qF -- "$want" "$TMPDIR/metrics" || fail "/metrics lacks: $want"
done
code=$(get /nope "$TMPDIR/nope")
[ "$code" = 404 ] || fail "/nope: HTTP $code, expected 404"
# The root says where the metrics are (it answered 404), and the exporter's
# start printed nothing on stderr (libmicrohttpd warned of its logger's
# place at every start) (#35, Low).
code=$(get / "$TMPDIR/root")
[ "$code" = 200 ] || fail "/: HTTP $code, expected 200"
grep -q '/metrics' "$TMPDIR/root" || fail "/: does not name /metrics: $(cat "$TMPDIR/root")"
[ -s "$TMPDIR/exp.err" ] && fail "export's start printed on stderr: $(cat "$TMPDIR/exp.err")"

# A port in use: vramctl's one line, naming the address and the cause,
# and nothing from libmicrohttpd (which said "port 0") (#25).
timeout 10 "$V" export --listen "127.0.0.1:$port" >/dev/null 2>"$TMPDIR/inuse"
[ $? = 125 ] || fail "a port in use: expected exit 125"
[ "$(wc -l <"$TMPDIR/inuse")" = 1 ] || fail "a port in use: not one line: $(cat "$TMPDIR/inuse")"
grep -qF "cannot listen on 127.0.0.1:$port: Address already in use" "$TMPDIR/inuse" ||
	fail "a port in use: $(cat "$TMPDIR/inuse")"

# A host name is resolved (getaddrinfo): localhost serves (#25).
mkfifo "$TMPDIR/lh.out"
(
	close_holder_fds
	exec "$V" export --listen localhost:0 >"$TMPDIR/lh.out" 2>"$TMPDIR/lh.err"
) &
lpid=$!
exec {lr}<"$TMPDIR/lh.out"
if read -r -t 20 -u "$lr" line; then
	case $line in
	"vramctl: serving http://127.0.0.1:"*/metrics | "vramctl: serving http://[::1]:"*/metrics) ;;
	*) fail "--listen localhost:0: unexpected first line: $line" ;;
	esac
else
	fail "--listen localhost:0 printed nothing: $(cat "$TMPDIR/lh.err")"
fi
kill -TERM "$lpid"
wait "$lpid"
exec {lr}<&-

# A second scrape sees a change: the capped program gone.
stop_holder a
code=$(get /metrics "$TMPDIR/metrics2")
[ "$code" = 200 ] || fail "second scrape: HTTP $code"
grep -qF "vramctl_process_used_bytes{pid=\"$HPID_a\"" "$TMPDIR/metrics2" && fail "second scrape still shows the stopped program"

kill -TERM "$xpid"
wait "$xpid"
rc=$?
[ $rc = 0 ] || fail "export exited $rc on SIGTERM"
grep -q "stopped (SIGTERM)" "$TMPDIR/exp.err" || fail "no clean-stop message: $(cat "$TMPDIR/exp.err")"
exec {xr}<&-

"$V" export --listen nowhere >/dev/null 2>"$TMPDIR/bad"
[ $? = 125 ] || fail "bad --listen: expected exit 125"
grep -q "nowhere" "$TMPDIR/bad" || fail "bad --listen: message does not name it"

stop_holder free
if [ "$fails" = 0 ]; then
	if ! command -v promtool >/dev/null; then
		echo "other checks passed"
		skip "promtool not installed (Debian package prometheus): metrics not validated"
	fi
	promtool check metrics <"$TMPDIR/metrics" >"$TMPDIR/promtool" 2>&1 || {
		fail "promtool check metrics:"
		cat "$TMPDIR/promtool" >&2
	}
	# The formatter's golden outputs (every scenario) pass promtool too.
	for f in "$GOLDEN"/*.prom; do
		promtool check metrics <"$f" >"$TMPDIR/promtool" 2>&1 && continue
		# HAMi's legacy names (export --hami) are camelCase, HAMi's choice: that lint only.
		[ "${f##*/}" = hami.prom ] &&
			! grep -v "should be written in 'snake_case' not 'camelCase'" "$TMPDIR/promtool" | grep -q . &&
			continue
		{
			fail "promtool check metrics on $f:"
			cat "$TMPDIR/promtool" >&2
		}
	done
fi
finish
