# tests/report/lib.bash - helpers for the report, trace and plot tests
# (sourced, not a test: tests/run only runs *.sh).
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=4G
P=$VR_BUILD/tests/report/memprog

# jqv FILE FILTER: one value from a JSON file (jq parses it: a real parser,
# not ours).
jqv() { jq -r "$2" "$1"; }

# expect_eq WANT GOT WHAT
expect_eq() {
	[ "$2" = "$1" ] || fail "$3: got '$2', expected '$1'"
}

# The checks below need the real library (the TSan stand-in records nothing).
need_cap() {
	if ! has_cap; then
		echo "skip: needs the real library (TSan stand-in in use)"
		exit 77
	fi
}

# has_ended PID: waits until the process has ended (a zombie, or gone). Killing
# is asynchronous; this polls the process's state, it never times anything.
has_ended() {
	local i state
	for ((i = 0; i < 3000; i++)); do
		state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
		case $state in '' | Z | X) return 0 ;; esac
		sleep 0.01
	done
	fail "process $1 did not end"
}

# denial_with_holders ERR: three members of group "denials" under 1 GiB:
# two holding 300 and 200 MiB (their PIDs in pa and pb), a third that takes
# 100 MiB and is refused 600 MiB, its stderr in ERR (report_group.sh, and
# tests/docs/transcripts.sh, which compares the line the docs quote).
denial_with_holders() {
	local a b
	rm -f h4 h5 r4 r5
	mkfifo h4 h5 r4 r5
	"$V" run --limit 1G --group denials -- "$P" keep 300 ready wait <h4 >r4 2>/dev/null &
	a=$!
	exec 7>h4
	read -r _ pa <r4
	"$V" run --limit 1G --group denials -- "$P" keep 200 ready wait <h5 >r5 2>/dev/null &
	b=$!
	exec 8>h5
	read -r _ pb <r5
	"$V" run --limit 1G --group denials -- "$P" keep 100 deny 600 2>"$1"
	expect_rc 0 $? "third member"
	exec 7>&- 8>&-
	wait $a $b
}
