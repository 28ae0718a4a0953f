# A member's record cannot be made to kill the program (issue #29): it was a
# shared file mapping in /tmp, and truncating it raised SIGBUS (exit 135) in
# the program at its next allocation. Whatever record the test can reach
# (files in the run's directory, the member's descriptors) is truncated while
# the member runs: the program ends as it would have, the report still has
# its numbers after it exited, and the run's directory is gone at the end.
. "$VR_SRC/tests/report/lib.bash"
need_cap

# truncate_records PID: every record of the run the test can reach, to 0.
truncate_records() {
	local f
	for f in "$TMPDIR"/vramctl-record-*/* /proc/"$1"/fd/*; do
		case $(readlink "$f" 2>/dev/null || echo "$f") in
		*.vrr | *vramctl-record*) truncate -s 0 "$f" 2>/dev/null ;;
		esac
	done
}

for how in "--report=r.json" "--report=r.json --trace=t.json" "--report=r.json --stacks"; do
	rm -f r.json t.json
	mkfifo in
	# shellcheck disable=SC2086
	"$V" run --limit 1G $how -- "$P" keep 10 ready wait keep 20 temp 30 keep 40 <in >out 2>err &
	run=$!
	exec 3>in
	rm in
	for ((i = 0; i < 1000; i++)); do
		grep -q '^ready' out && break
		sleep 0.01
	done
	pid=$(awk '/^ready/ { print $2 }' out)
	[ -n "$pid" ] || fail "$how: the program did not start: $(cat err)"
	[ -n "$pid" ] && truncate_records "$pid"
	exec 3>&-
	wait "$run"
	expect_rc 0 $? "$how: the program after its record was truncated"
	expect_eq 4 "$(jqv r.json '.processes[0].devices[0].allocations')" "$how: allocations"
	expect_eq 70 "$(( $(jqv r.json '.processes[0].held_at_exit | map(.bytes) | add') >> 20 ))" \
		"$how: MiB held at exit"
	[ ! -f t.json ] || jq . t.json >/dev/null || fail "$how: the trace is not JSON"
done
# The record directory goes with the run, whatever the run did.
"$V" run --report -- /nonexistent/prog 2>/dev/null
"$V" run --report=/dev/full -- true 2>/dev/null
"$V" run --limit 1G --report -- sh -c "\"$P\" keep 10 & exit 0" 2>/dev/null
wait
ls -d "$TMPDIR"/vramctl-record-* 2>/dev/null && fail "record directory left behind"
finish
