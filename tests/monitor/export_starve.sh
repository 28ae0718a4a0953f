#!/usr/bin/env bash
# export_starve - `vramctl export` keeps answering scrapes while 200 idle
# clients and 80 slow-loris clients (one header byte now and then) are
# connected on loopback, and closes them itself (before: 64 connection
# slots, all held, and no scrape answered until they left). Bounded: every
# scrape under curl -m, every wait a fixed number of rounds; the exporter is
# stopped at the end. Then 700 clients reopening every closed connection.
. "$VR_SRC/tests/monitor/lib.bash"
command -v curl >/dev/null || skip "curl not installed"
ulimit -n 4096 2>/dev/null || ulimit -n 1024
trap "" PIPE # a write to a client the exporter closed fails, it does not kill us

start_export
xpid=$XPID xr=$XR port=$PORT
trap 'kill -TERM $xpid 2>/dev/null' EXIT
scrape() { curl -s -m 10 -o "$TMPDIR/scrape" -w '%{http_code}' "http://127.0.0.1:$port/metrics"; }

# 200 idle clients: connected, never sending a byte.
idle=()
for i in $(seq 200); do
	exec {f}<>"/dev/tcp/127.0.0.1/$port" || { fail "idle client $i could not connect"; break; }
	idle+=("$f")
done
# 80 slow-loris clients: a request line, then one header byte per second.
loris=()
for i in $(seq 80); do
	exec {f}<>"/dev/tcp/127.0.0.1/$port" || { fail "slow client $i could not connect"; break; }
	printf 'GET /metrics HTTP/1.1\r\nX' >&"$f"
	loris+=("$f")
done
ok=0
for round in $(seq 12); do
	for f in "${loris[@]}"; do printf 'x' >&"$f" 2>/dev/null; done
	[ "$(scrape)" = 200 ] && ok=$((ok + 1))
	sleep 1
done
[ "$ok" = 12 ] || fail "only $ok of 12 scrapes answered with 200 while clients held connections"
grep -q '^vramctl_build_info' "$TMPDIR/scrape" || fail "the last scrape has no metrics"

# By now (12 s, past the exporter's 5 s limits) it has closed them all: a
# read sees the end of the stream (bounded: up to 20 more rounds).
open=0
for f in "${idle[@]}" "${loris[@]}"; do
	for try in $(seq 20); do
		read -r -t 1 -u "$f" _
		rc=$?
		[ $rc -le 128 ] && break # end of stream (or a reply), not a timeout
	done
	[ $rc -gt 128 ] && open=$((open + 1))
	exec {f}<&-
done
[ "$open" = 0 ] || fail "$open client connections were never closed by the exporter"

# 700 clients that reopen every connection closed on them (more than the
# exporter's 512 slots): a scrape still finds a slot and is answered at once
# (before: each waited about 5 s for a slot, until a client's timer ran
# out). Bounded: the churn ends by itself after 12 s; each scrape has 3 s.
python3 "$VR_SRC/tests/monitor/churn.py" "$port" 700 12 >"$TMPDIR/churn" &
churn=$!
sleep 2
ok=0
for round in $(seq 6); do
	[ "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics")" = 200 ] &&
		ok=$((ok + 1))
	sleep 1
done
wait "$churn"
[ "$ok" = 6 ] || fail "only $ok of 6 scrapes answered within 3 s while 700 clients churned"
[ "$(cat "$TMPDIR/churn")" -gt 700 ] || fail "the churning clients were never closed on: $(cat "$TMPDIR/churn")"

kill -TERM "$xpid"
wait "$xpid"
rc=$?
trap - EXIT
[ $rc = 0 ] || fail "export exited $rc on SIGTERM"
finish
