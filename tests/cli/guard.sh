#!/usr/bin/env bash
# guard.sh - root's guard service (vramctl guard, #38), started here as
# systemd would (through systemd-socket-activate when it is there) or with
# --socket; no systemd runs on the build machines. A user made here asks
# for guarantees on a simulated 16 GiB card every user shares:
#   without the service, a user's `run --guarantee` is refused (125) with
#   one line saying how to get it; the library says it once and borrows;
#   with it, the guarantee is admitted for the caller's user (the kernel's
#   word, not the request's) and tied to the caller: it ends when the
#   caller dies; a service started after one that died adopts what it kept;
#   at most 8 guarantees per user and GPU; a client that connects and says
#   nothing holds no one up; requests it does not know and GPUs NVML does
#   not list are refused; it refuses to run as anyone but root, and exits
#   when idle (--idle).
. "$VR_SRC/tests/cli/common.bash"
. "$VR_SRC/tests/shared_card.bash"
shared_card_needs "the service is root's; a user is made"

W=$(mktemp -d /tmp/vramctl-guard.XXXXXX)
chmod 0755 "$W"
user=vrgu$$
guard=
stop_guard() {
	[ -n "$guard" ] && kill -9 "$guard" 2>/dev/null && wait "$guard" 2>/dev/null
	guard=
}
cleanup() {
	stop_guard
	"$W/build/vramctl" guard --reclaim --device-dir "$W/devices" 2>/dev/null
	userdel "$user" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
useradd -M -d /nonexistent -s /bin/sh "$user" || { echo "skip: useradd failed"; exit 77; }
shared_card "$W"
mkdir -p "$W/reg"
chmod 0700 "$W/reg"
chown "$user" "$W/reg"
V=$B/vramctl
S=$W/guard.sock
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0 VRAMSIM_STATE_DIR=$W/sim
export VRAMCTL_DEVICE_DIR=$W/devices VRAMCTL_GUARD_SOCKET=$S VRAMCTL_COUNT=allocations
export LD_LIBRARY_PATH=$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
uuid=$("$V" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["uuid"])')
hex=$(printf '%s' "${uuid#GPU-}" | tr -d -)

as_user() {
	(cd "$W" && runuser -u "$user" -- env -i PATH="$PATH" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0 VRAMSIM_STATE_DIR="$W/sim" \
		VRAMCTL_DEVICE_DIR="$W/devices" VRAMCTL_GUARD_SOCKET="$S" VRAMCTL_COUNT=allocations \
		VRAMCTL_REGISTRY_DIR="$W/reg" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" LSAN_OPTIONS="${LSAN_OPTIONS:-}" "$@")
}
# The guarantees the book holds: "group:uid:bytes ..." (status, as root).
guarantees() {
	"$V" status --json | python3 -c 'import json,sys
d = json.load(sys.stdin)["devices"][0]
print(" ".join("%s:%d:%d" % (e["group"], e["uid"], e["guarantee_bytes"]) for e in d.get("guarantees") or []))'
}
start_guard() {
	"$V" guard --socket "$S" --device-dir "$W/devices" --idle 0 2>>"$W/guard.err" &
	guard=$!
	for _ in $(seq 100); do [ -S "$S" ] && return; sleep 0.05; done
	fail "the guard service did not start: $(cat "$W/guard.err")"
}
# A raw client, as the user: sends a line, prints its PID and the answer,
# then lives until its stdin ends.
CLIENT='import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
print(os.getpid(), s.makefile().readline().strip(), flush=True)
sys.stdin.read()'
ask() { # ask REQUEST: the answer, the client gone at once
	as_user python3 -c "$CLIENT" "$S" "$1" </dev/null | cut -d' ' -f2-
}
# hold REQUEST: a client that stays (reading the fifo held open here) until
# killed: its PID in HPID, the answer in HANS.
mkfifo "$W/in"
exec 8<>"$W/in"
n=0
hold() {
	n=$((n + 1))
	as_user python3 -c "$CLIENT" "$S" "$1" <"$W/in" >"$W/hold.$n" &
	for _ in $(seq 200); do [ -s "$W/hold.$n" ] && break; sleep 0.05; done
	read -r HPID HANS <"$W/hold.$n"
}
uid=$(id -u "$user")

# --- no service: refused, said once, with how to get one
as_user "$V" run --limit 8G --guarantee 4G -- true >out 2>err
expect_rc 125 $? "a user's run --guarantee without the service"
expect_grep "systemctl enable --now vramctl-guard.socket" err "how to get the service"
[ "$(grep -c . err)" = 1 ] || fail "one line: $(cat err)"
as_user env LD_PRELOAD="$B/libvramctl.so" VRAMCTL_LIMIT=2G VRAMCTL_GUARANTEE=1G \
	VRAMCTL_GROUP=lib "$B/memctl" <<<"a 1536
a 1024" >out 2>err
[ "$(tr '\n' ' ' <out)" = "ready $(head -1 out | cut -d' ' -f2) ok oom " ] || fail "the cap holds: $(cat out)"
[ "$(grep -c 'cannot be given' err)" = 1 ] && grep -q "no guard service at $S" err ||
	fail "the library says it once: $(cat err)"

# --- the service as systemd starts it (socket activation), or by hand
if command -v systemd-socket-activate >/dev/null; then
	# It passes on only the variables named (systemd passes none).
	systemd-socket-activate -l "$S" -E LD_LIBRARY_PATH -E VRAMSIM_DEVICES \
		-E VRAMSIM_CONTEXT_BYTES -E VRAMSIM_STATE_DIR -E ASAN_OPTIONS -E UBSAN_OPTIONS \
		"$V" guard --device-dir "$W/devices" --idle 0 2>>"$W/guard.err" &
	guard=$!
	for _ in $(seq 100); do [ -S "$S" ] && break; sleep 0.05; done
	chmod 0666 "$S" # systemd's SocketMode=0666
	[ "$(ask "book $hex")" = "ok 0" ] || fail "socket activation: $(cat "$W/guard.err")"
	stop_guard
	rm -f "$S"
else
	echo "note: no systemd-socket-activate: socket activation not tried"
fi
# The units the package ships, as systemd reads them (the binary: this one).
if command -v systemd-analyze >/dev/null; then
	mkdir "$W/units"
	cp "$VR_SRC/debian/vramctl.vramctl-guard.socket" "$W/units/vramctl-guard.socket"
	sed "s|^ExecStart=/usr/bin/vramctl|ExecStart=$V|" "$VR_SRC/debian/vramctl.vramctl-guard@.service" \
		>"$W/units/vramctl-guard@.service"
	ln -s vramctl-guard@.service "$W/units/vramctl-guard@main.service"
	(cd "$W/units" && systemd-analyze verify --man=no ./vramctl-guard.socket \
		./vramctl-guard@main.service) >"$W/verify" 2>&1 || fail "the units: $(cat "$W/verify")"
	[ -s "$W/verify" ] && fail "systemd-analyze on the units: $(cat "$W/verify")"
else
	echo "note: no systemd-analyze: the units not checked"
fi
start_guard
[ "$(stat -c %U:%a "$W/devices")" = root:755 ] || fail "the books' directory: $(stat -c %U:%a "$W/devices")"

# --- a user's run: admitted for the user the kernel names, held while it runs
mkfifo "$W/go"
chmod 0666 "$W/go"
as_user "$V" run --group held --limit 8G --guarantee 4G -- sh -c "read -r _ <$W/go" 2>err &
run=$!
for _ in $(seq 100); do [ -n "$(guarantees)" ] && break; sleep 0.05; done
[ "$(guarantees)" = "held:$uid:$((4 << 30))" ] || fail "the user's guarantee: $(guarantees) $(cat err)"
echo >"$W/go"
wait "$run"
expect_rc 0 $? "the run"
for _ in $(seq 100); do [ -z "$(guarantees)" ] && break; sleep 0.05; done
[ -z "$(guarantees)" ] || fail "the guarantee outlived its run: $(guarantees)"

# --- a raw client: its uid is the kernel's; killed, its guarantee ends
hold "admit $hex 1073741824 00000000000000aa raw"
[ "$HANS" = "ok 1073741824" ] || fail "the raw client: $HANS"
[ "$(guarantees)" = "raw:$uid:$((1 << 30))" ] || fail "raw's guarantee: $(guarantees)"
"$V" guard --reclaim --device-dir "$W/devices"
expect_rc 1 $? "--reclaim while a guarantee's process lives (it stays)"
[ "$(guarantees)" = "raw:$uid:$((1 << 30))" ] || fail "--reclaim ended a live one: $(guarantees)"
# The service dies (upgrade, crash): the entry stays while its holder lives;
# the next service adopts it, and ends it with its holder.
stop_guard
[ "$(guarantees)" = "raw:$uid:$((1 << 30))" ] || fail "kept while its holder lives: $(guarantees)"
rm -f "$S"
start_guard
kill -9 "$HPID"
for _ in $(seq 100); do [ -z "$(guarantees)" ] && break; sleep 0.05; done
[ -z "$(guarantees)" ] || fail "the adopted guarantee outlived its holder: $(guarantees)"

# --- at most 8 per user and GPU; a silent client holds no one up
pids=()
for i in 1 2 3 4 5 6 7 8 9; do
	hold "admit $hex 1048576 $(printf '%016x' $((i + 16))) g$i"
	pids+=("$HPID")
	if [ "$i" -le 8 ]; then
		[ "$HANS" = "ok 1048576" ] || fail "guarantee $i: $HANS"
	else
		[ "$HANS" = "no your user holds 8 guarantees on this GPU already" ] ||
			fail "the 9th: $HANS"
	fi
done
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(5)' "$S" &
silent=$!
sleep 0.2
start=$(date +%s%N)
[ "$(ask "book $hex")" = "ok 0" ] || fail "a request beside a silent client"
took=$((($(date +%s%N) - start) / 1000000))
[ "$took" -lt 1000 ] || fail "a silent client held the service up: $took ms"
kill "$silent" 2>/dev/null
kill -9 "${pids[@]}" 2>/dev/null
for _ in $(seq 100); do [ -z "$(guarantees)" ] && break; sleep 0.05; done
[ -z "$(guarantees)" ] || fail "guarantees outlived their holders: $(guarantees)"
kill -0 "$guard" || fail "the service died"
"$V" guard --reclaim --device-dir "$W/devices"
expect_rc 0 $? "--reclaim with no guarantee left"

# --- what it refuses
case $(ask "admit $hex 0 00000000000000ab x") in "no a request this service does not know") ;; *) fail "0 bytes accepted" ;; esac
case $(ask "hello") in "no a request this service does not know") ;; *) fail "garbage accepted" ;; esac
case $(ask "book 00112233445566778899aabbccddeeff") in "no the GPU is not one NVML lists here"*) ;; *) fail "an unknown GPU's book made" ;; esac
as_user "$V" guard --socket "$W/mine.sock" 2>err
expect_rc 125 $? "the service as a user"
expect_grep "must run as root" err "why"
stop_guard
exec 8>&-
rm -f "$S"
start=$(date +%s)
"$V" guard --socket "$S" --device-dir "$W/devices" --idle 1 2>>"$W/guard.err"
expect_rc 0 $? "an idle service exits"
[ $(($(date +%s) - start)) -lt 10 ] || fail "the idle service stayed"
finish
