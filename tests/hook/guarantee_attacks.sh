#!/usr/bin/env bash
# guarantee_attacks.sh - what another local user can do to guarantees (#38),
# each attack of the issue with two users on one simulated 16 GiB card
# shared by every user, whose contexts take nothing:
#   the victim (a user made here) holds a guarantee through root's guard
#   service (vramctl run --guarantee, started here with --socket);
#   the attacker is vrslurm (attacker.py); root runs the third parties.
# In every case: no guaranteed group is refused within its guarantee, no
# group passes its limit, and no allocation of a third party waits on a
# lock the attacker holds (each answers within a second; before #38 they
# waited 2 s and were refused). The checks: guarantee_attacks.py.
. "$VR_SRC/tests/cli/common.bash"
. "$VR_SRC/tests/shared_card.bash"
shared_card_needs "the device book is root's; users are made"
id vrslurm >/dev/null 2>&1 || { echo "skip: no user vrslurm (the suite's)"; exit 77; }

# Everything the users run, in a directory they can reach (the build may be
# in a home of root's, mode 0700), with the card's state shared (1777), the
# device books root's (0755) and a registry of each user's own.
W=$(mktemp -d /tmp/vramctl-attacks.XXXXXX)
chmod 0755 "$W"
victim=vrgv$$
guard=
cleanup() {
	[ -n "$guard" ] && kill "$guard" 2>/dev/null && wait "$guard" 2>/dev/null
	"$W/build/vramctl" guard --reclaim --device-dir "$W/devices" 2>/dev/null
	userdel "$victim" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
useradd -M -d /nonexistent -s /bin/sh "$victim" || { echo "skip: useradd failed"; exit 77; }
shared_card "$W"
mkdir -p "$W/reg-victim" "$W/reg-root" "$W/shared"
cp "$VR_SRC/tests/hook/attacker.py" "$B/"
chmod 1777 "$W/shared"
chmod 0700 "$W/reg-victim" "$W/reg-root"
chown "$victim" "$W/reg-victim"
runuser -u "$victim" -- test -x "$B/memctl" || fail "the victim cannot reach $B"

export W B VICTIM=$victim ATTACKER=vrslurm
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0 VRAMSIM_STATE_DIR=$W/sim
export VRAMCTL_DEVICE_DIR=$W/devices VRAMCTL_GUARD_SOCKET=$W/guard.sock
export LD_LIBRARY_PATH=$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$B/vramctl" guard --socket "$W/guard.sock" --device-dir "$W/devices" --idle 0 2>"$W/guard.err" &
guard=$!
for _ in $(seq 100); do [ -S "$W/guard.sock" ] && break; sleep 0.05; done
[ -S "$W/guard.sock" ] || fail "the guard service did not start: $(cat "$W/guard.err")"
python3 "$VR_SRC/tests/hook/guarantee_attacks.py" || fail "see above"
[ -s "$W/guard.err" ] && echo "the guard service said: $(cat "$W/guard.err")"
finish
