# `vramctl run` and `status` against a group whose lock word was overwritten
# (what hung every member and `vramctl run` before: a futex wait on a lock
# word naming no live member, or a live member that never unlocks it).
#   - a word naming no live member: status says so; a run of the group
#     takes the lock over and runs;
#   - a word naming a live member: a run of the group gives up at the
#     bound with a clear message (exit 125), and dies of SIGTERM while it
#     waits (it never hangs).
# And a capped program whose group's cap is raised, or whose in-use total is
# zeroed, while it runs: it says so once on stderr, keeps its own books, and
# exits normally.
# Every command runs under `timeout`, so a hang fails instead of stalling.
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G
reg=$VRAMCTL_REGISTRY_DIR
POKE=$VR_BUILD/tests/cli/regpoke
[ -x "$POKE" ] || fail "$POKE is not built"

mkfifo ready release
"$V" run --group dmg --limit 1G -- sh -c 'echo up >ready; read -r _ <release' &
holder=$!
read -r _ <ready

"$POKE" "$reg" dmg lock 0xdeadbeef || fail "poke"
timeout 30 "$V" status >status.txt 2>&1
expect_rc 0 $? "status with a damaged lock word"
expect_grep "not a live member" status.txt "status reports the lock"
timeout 30 "$V" run --group dmg --limit 1G -- true 2>err
expect_rc 0 $? "a run of the group takes a lock held by no member over"
timeout 30 "$V" status >status.txt 2>&1
grep -q "not a live member" status.txt && fail "the lock was not taken over: $(cat status.txt)"

"$POKE" "$reg" dmg slot0 || fail "poke"
VRAMCTL_TEST_LOCK_BOUND_MS=300 timeout 30 "$V" run --group dmg --limit 1G -- true 2>err
expect_rc 125 $? "a run of a group whose lock a live member never releases"
expect_grep "held by a live member" err "the message"
# SIGTERM while it waits (the default bound, 5 s): it ends.
timeout 30 "$V" run --group dmg --limit 1G -- true 2>err &
waiter=$!
sleep 0.3
kill -TERM $waiter
wait $waiter
rc=$?
case $rc in 143 | 125) ;; *) fail "a run sent SIGTERM while waiting: exit $rc, expected 143 or 125" ;; esac

echo >release
wait $holder
expect_rc 0 $? "the holder"

HOLDER=$VR_BUILD/tests/monitor/holder
if has_cap && [ -x "$HOLDER" ]; then
	for what in "cap 0xffffffffffffff" "inuse 0"; do
		g=h${what%% *}
		rm -f h.in h.out
		mkfifo h.in h.out
		VRAMCTL_LIMIT=1G VRAMCTL_GROUP=$g LD_PRELOAD="$LIB" "$HOLDER" 100 200 <h.in >h.out 2>h.err &
		hp=$!
		exec {hw}>h.in
		exec {hr}<h.out
		read -r -t 20 -u "$hr" line || fail "$g: the holder did not start"
		case $line in "ready 2 "*) ;; *) fail "$g: holder: $line" ;; esac
		# shellcheck disable=SC2086
		"$POKE" "$reg" "$g" $what || fail "poke $what"
		exec {hw}>&- # the holder frees its two blocks and exits
		wait $hp
		expect_rc 0 $? "$g: the holder"
		exec {hr}<&-
		n=$(grep -c "the group's books are damaged" h.err)
		[ "$n" = 1 ] || fail "$g: expected the damage said once, got $n: $(cat h.err)"
		expect_grep "this process keeps its own books under the caps it joined with" h.err "$g: the outcome"
	done
fi
finish
