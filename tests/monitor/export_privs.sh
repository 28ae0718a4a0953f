#!/usr/bin/env bash
# export_privs - `vramctl export` run as root keeps only what the node's
# reads need once its socket is bound: after it has answered a scrape
# (which lists a capped program whose books are in an IPC namespace of its
# own, read by entering it), every thread of it has no_new_privs set and,
# in its effective, permitted and bounding sets, only those of
# CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_IPC_OWNER and CAP_DAC_READ_SEARCH the
# test's shell held; nothing inheritable or ambient.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
[ "$(id -u)" = 0 ] || skip "needs root (the capabilities it drops)"
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
unshare --ipc true 2>/dev/null || skip "cannot make an IPC namespace here"
fixed_card

HOLD_PREFIX="unshare --ipc" start_holder ns VRAMCTL_LIMIT=1G VRAMCTL_GROUP=privs LD_PRELOAD="$LIB" -- 100

start_export
epid=$XPID port=$PORT

scrape "$port" "$TMPDIR/metrics" || fail "cannot connect to export"
grep -q '^vramctl_group_limit_bytes{.*group="privs".*} 1073741824' "$TMPDIR/metrics" ||
	fail "the scrape does not list the program in its own IPC namespace with its cap: $(grep privs "$TMPDIR/metrics")"

# The read capabilities the shell holds: what may remain.
mask=$(((1 << 21) | (1 << 19) | (1 << 15) | (1 << 2)))
prm=$((16#$(awk '/^CapPrm:/ { print $2 }' /proc/self/status)))
want=$(printf '%016x' $((prm & mask)))
n=0
for s in /proc/"$epid"/task/*/status; do
	n=$((n + 1))
	for f in CapEff CapPrm CapBnd; do
		got=$(awk -v f="$f:" '$1 == f { print $2 }' "$s")
		[ "$got" = "$want" ] || fail "$s: $f is $got, expected $want (the read capabilities only)"
	done
	for f in CapInh CapAmb; do
		got=$(awk -v f="$f:" '$1 == f { print $2 }' "$s")
		[ "$got" = 0000000000000000 ] || fail "$s: $f is $got, expected none"
	done
	[ "$(awk '$1 == "NoNewPrivs:" { print $2 }' "$s")" = 1 ] || fail "$s: no_new_privs is not set"
done
[ $n -ge 2 ] || fail "export has $n thread(s); expected the main one and the server's"

kill -TERM "$epid"
wait "$epid" || fail "export exited $? on SIGTERM"
stop_holder ns
finish
