# tests/cli/common.bash - helpers sourced by the tests of `vramctl run` and
# `vramctl demo` (not a test itself: tests/run only runs *.sh).
set -u
V=$VR_BUILD/vramctl
LIB=$VR_BUILD/libvramctl.so
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# expect_rc WANT GOT WHAT
expect_rc() {
	[ "$2" = "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_grep PATTERN FILE WHAT: a fixed string in a file
expect_grep() {
	grep -qF -- "$1" "$2" || { fail "$3: '$1' not in output:"; sed 's/^/      /' "$2" >&2; }
}

finish() {
	if [ "$fails" -gt 0 ]; then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}

sim_only() { [ "${VR_TEST_DRIVER:-sim}" = sim ]; }

