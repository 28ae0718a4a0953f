# Another local user cannot take a user's books away. With XDG_RUNTIME_DIR
# unset (Slurm jobs, cron, ssh without a login session) the default registry
# is /tmp/vramctl-<uid>, a name anyone can create first in /tmp. Root makes
# two throwaway users here: the squatter creates the victim's path; the
# victim's `vramctl run` must still run capped (its books move to a
# directory in its home, and stay there), and its own directory open to
# others (0755) is refused. Both users are removed at the end.
. "$VR_SRC/tests/cli/common.bash"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to create users"; exit 77; }
for c in useradd userdel runuser; do
	command -v "$c" >/dev/null || { echo "skip: no $c"; exit 77; }
done
export VRAMSIM_DEVICES=16G

W=$(mktemp -d /tmp/vramctl-squat.XXXXXX)
chmod 0755 "$W"
sq=vrsq$$
vi=vrvi$$
cleanup() {
	userdel "$sq" 2>/dev/null
	userdel "$vi" 2>/dev/null
	[ -n "${vuid:-}" ] && rm -rf "/tmp/vramctl-$vuid"
	rm -rf "$W"
}
trap cleanup EXIT
useradd -M -d /nonexistent -s /bin/sh "$sq" || { echo "skip: useradd failed"; exit 77; }
useradd -M -d "$W/home" -s /bin/sh "$vi" || { echo "skip: useradd failed"; exit 77; }
mkdir -m 0700 "$W/home" "$W/home/sim"
chown -R "$vi" "$W/home"
vuid=$(id -u "$vi")

# The victim runs a copy of what `run` needs (the program, the library, its
# helpers, the simulated driver) in the test's own directory: the build
# itself may be out of its reach (a clone in root's home, mode 0700).
B=$W/build
mkdir -p "$B/sim"
cp -a "$VR_BUILD/vramctl" "$VR_BUILD/libvramctl.so" "$VR_BUILD/ld.so.preload" "$VR_BUILD/libexec" "$B/"
cp -a "$VR_BUILD"/sim/lib*.so* "$B/sim/"
V=$B/vramctl
LD_LIBRARY_PATH=${LD_LIBRARY_PATH//"$VR_BUILD/sim"/$B/sim}
runuser -u "$vi" -- test -x "$V" || fail "the victim cannot reach the copy in $B"
# A wait on a fifo that nobody will open ends with a failure, not never.
fifo_read() { timeout 30 sh -c 'read -r _ <"$1"' _ "$1" || fail "nothing came through $1 in 30 s"; }
fifo_write() { timeout 30 sh -c 'echo >"$1"' _ "$1" || fail "nobody read $1 in 30 s"; }

# The victim, with no XDG_RUNTIME_DIR and no VRAMCTL_REGISTRY_DIR.
as_victim() {
	(cd "$W/home" && runuser -u "$vi" -- env -i PATH="$PATH" HOME="$W/home" \
		LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" VRAMSIM_DEVICES=16G \
		VRAMSIM_STATE_DIR="$W/home/sim" VRAMCTL_LIBRARY="${VRAMCTL_LIBRARY:-}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		TSAN_OPTIONS="${TSAN_OPTIONS:-}" LSAN_OPTIONS="${LSAN_OPTIONS:-}" "$@")
}

runuser -u "$sq" -- mkdir -m 0777 "/tmp/vramctl-$vuid" || fail "the squatter could not squat"
as_victim "$V" run --limit 1G -- sh -c 'echo "group=$VRAMCTL_GROUP"' >out 2>err
expect_rc 0 $? "a run whose /tmp path another user took"
expect_grep "group=run-" out "the run's group"
fallback="$W/home/.vramctl-run-$(hostname)"
[ "$(stat -c %U:%a "$fallback" 2>/dev/null)" = "$vi:700" ] ||
	fail "no private registry in the home: $(ls -la "$W/home")"
[ -s err ] && fail "messages: $(cat err)"

# A group held by one run is joined and seen by others, through the same place.
mkfifo "$W/ready" "$W/release"
chmod 0666 "$W/ready" "$W/release"
as_victim "$V" run --group held --limit 1G -- sh -c "echo up >$W/ready; read -r _ <$W/release" &
holder=$!
fifo_read "$W/ready"
ls "$fallback" | grep -qx held.vrg || fail "the group is not in $fallback: $(ls -la "$fallback")"
as_victim "$V" status --json >status.json 2>&1
expect_grep '"name": "held"' status.json "status of the victim sees the group"
# The squatter leaving does not split the user's books: they stay in the home.
rmdir "/tmp/vramctl-$vuid"
as_victim "$V" run --group held --limit 2G -- true 2>err
expect_rc 0 $? "joining the held group after the squat is gone"
expect_grep "group's cap applies" err "the joiner found the same group"
fifo_write "$W/release"
wait "$holder"
expect_rc 0 $? "the holder"

# The user's own registry directory open to others is refused, not used.
mkdir -m 0755 "$W/open"
chown "$vi" "$W/open"
as_victim env VRAMCTL_REGISTRY_DIR="$W/open" "$V" run --limit 1G -- true 2>err
expect_rc 125 $? "a registry directory with mode 0755"
expect_grep "not 0700" err "the mode message"
finish
