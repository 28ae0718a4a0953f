# tests/shared_card.bash - for the tests where several users' processes
# share a GPU (#38: tests/hook/guarantee_attacks.sh, tests/cli/guard.sh;
# sourced, not a test itself): shared_card DIR copies what the users run
# into DIR/build (the build may sit in a home of root's, mode 0700: the
# program, the library, its helpers, the simulated driver, memctl) and
# makes DIR/sim the state directory of one simulated card every user
# shares (sticky and writable by all, as sim/card.c takes it), DIR/devices
# root's directory of the device books (0755); sets B to DIR/build.
# shared_card_needs WHY: exits 77 (skip) where these tests cannot run (WHY:
# why they need root).
shared_card_needs() {
	sim_only || { echo "skip: needs the simulated driver (the card's figures exact)"; exit 77; }
	has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
	[ "$(id -u)" = 0 ] || { echo "skip: needs root ($1)"; exit 77; }
	local c
	for c in useradd userdel runuser python3; do
		command -v "$c" >/dev/null || { echo "skip: no $c"; exit 77; }
	done
	[ -x "$VR_BUILD/tests/hook/memctl" ] || { echo "skip: memctl is not built"; exit 77; }
}

shared_card() {
	B=$1/build
	mkdir -p "$B/sim" "$1/devices" "$1/sim"
	cp -a "$VR_BUILD/vramctl" "$VR_BUILD/libvramctl.so" "$VR_BUILD/ld.so.preload" \
		"$VR_BUILD/libexec" "$B/"
	cp -a "$VR_BUILD"/sim/lib*.so* "$B/sim/"
	cp "$VR_BUILD/tests/hook/memctl" "$B/"
	chmod 1777 "$1/sim"
	chmod 0755 "$1" "$1/devices"
}
