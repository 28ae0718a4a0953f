# tests/lib.bash - what every shell test's helpers start from (sourced by
# tests/cli/common.bash and tests/monitor/lib.bash; not a test itself:
# tests/run only runs *.sh). Checks count their failures and go on, so one
# run reports them all; finish turns the count into the exit status.
set -u
V=$VR_BUILD/vramctl
LIB=$VR_BUILD/libvramctl.so
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

finish() {
	if [ "$fails" -gt 0 ]; then
		echo "$fails check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
