# tests/cli/common.bash - helpers sourced by the tests of `vramctl run` and
# `vramctl demo` (not a test itself: tests/run only runs *.sh).
. "$VR_SRC/tests/lib.bash"

# expect_rc WANT GOT WHAT
expect_rc() {
	[ "$2" = "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_grep PATTERN FILE WHAT: a fixed string in a file
expect_grep() {
	grep -qF -- "$1" "$2" || { fail "$3: '$1' not in output:"; sed 's/^/      /' "$2" >&2; }
}

sim_only() { [ "${VR_TEST_DRIVER:-sim}" = sim ]; }


# Under TSan, if the TSan-built library cannot be preloaded into an
# uninstrumented program (it crashed /bin/true when these tests were written:
# the hook's business, tested by its own tests), these tests still exercise
# the TSan-built vramctl itself, with a harmless stand-in named libvramctl.so
# as the library; checks that need the real cap are skipped (has_cap fails).
# In every other build the real library is used, and a crash fails the test.
has_cap() { true; }
case $VR_BUILD in
*-tsan)
	if ! LD_PRELOAD=$LIB /bin/true 2>/dev/null; then
		echo "note: the TSan-built $LIB crashes /bin/true; using a stand-in"
		mkdir -p "$TMPDIR/stand-in"
		cp "$(ldconfig -p | awk '/libm\.so\.6 / { print $NF; exit }')" \
			"$TMPDIR/stand-in/libvramctl.so"
		export VRAMCTL_LIBRARY=$TMPDIR/stand-in/libvramctl.so
		LIB=$VRAMCTL_LIBRARY
		has_cap() { false; }
	fi
	;;
esac
