#!/usr/bin/env bash
# export_privs - `vramctl export` run as root keeps the node's reads apart
# from the network (privilege separation, #37): after it has answered a
# scrape (which lists a capped program whose books are in an IPC namespace
# of its own, read by entering it),
#   - the process serving HTTP (it holds the listening socket) runs as
#     nobody (or --user's user), with no capability in any set, and
#     no_new_privs;
#   - the collector, its child, is the one with capabilities: in its
#     effective, permitted and bounding sets only those of CAP_SYS_ADMIN,
#     CAP_SYS_PTRACE, CAP_IPC_OWNER and CAP_DAC_READ_SEARCH the test's shell
#     held, nothing inheritable or ambient, no_new_privs, and no network
#     socket;
#   - SIGTERM stops both; the collector also goes when the server is killed.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
[ "$(id -u)" = 0 ] || skip "needs root (the capabilities it drops)"
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
unshare --ipc true 2>/dev/null || skip "cannot make an IPC namespace here"
fixed_card
# The simulator's card is root's 0700 directory: the server, which never
# reads it, does not need it; the collector is root.

HOLD_PREFIX="unshare --ipc" start_holder ns VRAMCTL_LIMIT=1G VRAMCTL_GROUP=privs LD_PRELOAD="$LIB" -- 100

field() { awk -v f="$2:" '$1 == f { print $2 }' "$1"; }
# The collector: the exporter's child.
child_of() {
	local s
	for s in /proc/[0-9]*/stat; do
		[ "$(awk '{ print $4 }' "$s" 2>/dev/null)" = "$1" ] && { s=${s#/proc/}; echo "${s%/stat}"; return; }
	done
}
# Socket inodes that are TCP or UDP sockets (of this network namespace).
net_inodes() { awk 'NR > 1 { print $10 }' /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null | sort -u; }
socket_inodes() { # PID: the inodes of its socket descriptors
	local f
	for f in /proc/"$1"/fd/*; do
		readlink "$f"
	done 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort -u
}

# check_export USER-NAME UID: one exporter, its two processes checked.
check_export() {
	start_export "$@"
	local epid=$XPID
	scrape "$PORT" "$TMPDIR/metrics" || fail "cannot connect to export"
	grep -q '^vramctl_group_limit_bytes{.*group="privs".*} 1073741824' "$TMPDIR/metrics" ||
		fail "the scrape does not list the program in its own IPC namespace with its cap: $(grep privs "$TMPDIR/metrics")"

	# The server: the serving user, no capability at all.
	local s n=0 want_uid=$SERVE_UID
	for s in /proc/"$epid"/task/*/status; do
		n=$((n + 1))
		[ "$(awk '$1 == "Uid:" { print $2 $3 $4 $5 }' "$s")" = "$want_uid$want_uid$want_uid$want_uid" ] ||
			fail "$s: the server runs as $(grep '^Uid:' "$s"), not uid $want_uid"
		for f in CapEff CapPrm CapBnd CapInh CapAmb; do
			[ "$(field "$s" $f)" = 0000000000000000 ] || fail "$s (server): $f is $(field "$s" $f), expected none"
		done
		[ "$(field "$s" NoNewPrivs)" = 1 ] || fail "$s: no_new_privs is not set"
	done
	[ $n -ge 2 ] || fail "the server has $n thread(s); expected the main one and libmicrohttpd's"
	net_inodes >"$TMPDIR/net"
	socket_inodes "$epid" | grep -qxFf "$TMPDIR/net" || fail "the server holds no network socket"

	# The collector: the read capabilities only, no network.
	local cpid
	cpid=$(child_of "$epid")
	[ -n "$cpid" ] || { fail "no collector process under the exporter $epid"; return; }
	local mask prm want
	mask=$(((1 << 21) | (1 << 19) | (1 << 15) | (1 << 2)))
	prm=$((16#$(awk '/^CapPrm:/ { print $2 }' /proc/self/status)))
	want=$(printf '%016x' $((prm & mask)))
	# Every thread; under ThreadSanitizer the main one only: its runtime
	# starts a thread of its own in a fork child before the child runs a
	# line of ours, and that thread keeps what the child had then.
	local tasks=(/proc/"$cpid"/task/*/status)
	case $VR_BUILD in *-tsan) tasks=(/proc/"$cpid"/task/"$cpid"/status) ;; esac
	for s in "${tasks[@]}"; do
		for f in CapEff CapPrm CapBnd; do
			[ "$(field "$s" $f)" = "$want" ] || fail "$s (collector): $f is $(field "$s" $f), expected $want (the read capabilities only)"
		done
		for f in CapInh CapAmb; do
			[ "$(field "$s" $f)" = 0000000000000000 ] || fail "$s (collector): $f is $(field "$s" $f), expected none"
		done
		[ "$(field "$s" NoNewPrivs)" = 1 ] || fail "$s (collector): no_new_privs is not set"
	done
	! socket_inodes "$cpid" | grep -qxFf "$TMPDIR/net" || fail "the collector holds a network socket"
	COLLECTOR=$cpid
}

SERVE_UID=$(id -u nobody 2>/dev/null || echo 65534)
check_export
kill -TERM "$XPID"
wait "$XPID" || fail "export exited $? on SIGTERM"
for _ in $(seq 50); do [ -d "/proc/$COLLECTOR" ] || break; sleep 0.1; done
[ ! -d "/proc/$COLLECTOR" ] || fail "the collector $COLLECTOR outlived a stopped export"

# Another serving user; and a server killed takes its collector with it.
OTHER=${VR_SLURM_USER:-vrslurm}
if id "$OTHER" >/dev/null 2>&1; then
	SERVE_UID=$(id -u "$OTHER")
	check_export --user "$OTHER"
	kill -KILL "$XPID"
	wait "$XPID" 2>/dev/null
	for _ in $(seq 50); do [ -d "/proc/$COLLECTOR" ] || break; sleep 0.1; done
	[ ! -d "/proc/$COLLECTOR" ] || fail "the collector $COLLECTOR outlived a killed server"
fi
# A serving user that is root, or unknown: refused, nothing served.
"$V" export --listen 127.0.0.1:0 --user 0 >out 2>err && fail "--user 0 was accepted"
grep -q "does not run as root" err || fail "--user 0: $(cat err)"
"$V" export --listen 127.0.0.1:0 --user no-such-user-37 >out 2>err && fail "an unknown --user was accepted"
grep -q "no such user" err || fail "--user no-such-user-37: $(cat err)"
stop_holder ns
finish
