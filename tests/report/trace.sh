# vramctl run --trace: a known program's timeline in Chrome trace-event
# JSON (parsed by jq): the counters' values in order, the cap, the denial
# after the allocations before it, starts and exits; rotation bounds the disk.
. "$VR_SRC/tests/report/lib.bash"
sim_only || { echo "skip: needs the simulator's device sizes"; exit 77; }
need_cap
M=1048576

"$V" run --limit 1G --trace t.json -- "$P" keep 100 temp 200 keep 50 deny 900 2>err
expect_rc 0 $? "traced program"
jq . t.json >/dev/null || fail "the trace is not JSON"
pid=$(jqv t.json '.traceEvents[] | select(.name == "process start") | .pid')
# The process's counter, in order: 100, 300, 100, 150 MiB, then 0 at its exit.
expect_eq "100 300 100 150 0" \
	"$(jqv t.json "[.traceEvents[] | select(.ph == \"C\" and .pid == $pid) | .args.bytes / $M] | map(tostring) | join(\" \")")" \
	"process counter sequence"
# The device's: the same (one member), and the cap.
expect_eq "0 100 300 100 150 0" \
	"$(jqv t.json "[.traceEvents[] | select(.ph == \"C\" and .name == \"in use\") | .args.bytes / $M] | map(tostring) | join(\" \")")" \
	"device counter sequence"
expect_eq 1024 "$(jqv t.json "[.traceEvents[] | select(.name == \"cap\")][0].args.bytes / $M")" "cap counter"
# One denial, after the last allocation and before the exit; timestamps in order.
expect_eq 1 "$(jqv t.json '[.traceEvents[] | select(.name == "denied")] | length')" "denials"
expect_eq 900 "$(jqv t.json ".traceEvents[] | select(.name == \"denied\") | .args.bytes / $M")" "denied bytes"
expect_eq true "$(jqv t.json "
	[.traceEvents[] | select(.ph != \"M\")] as \$e
	| (\$e | map(select(.name == \"denied\"))[0].ts) as \$d
	| ([\$e[] | select(.ph == \"C\" and .pid == $pid and .args.bytes > 0) | .ts] | max) < \$d
	  and ([\$e[] | select(.name == \"process exit\") | .ts][0]) > \$d")" "denial between the last allocation and the exit"
expect_eq true "$(jqv t.json "[.traceEvents[] | select(.pid == $pid and .ph != \"M\") | .ts] | . == sort")" "process events in time order"
expect_eq "$P keep 100 temp 200 keep 50 deny 900" "$(jqv t.json .otherData.command)" "command"
expect_eq "exit status 0" "$(jqv t.json '.traceEvents[] | select(.name == "process exit") | .args.ended')" "exit"

# A member that exits gives its memory back in the group's counter at its
# exit, before the next member's allocations (not at the end of the run).
"$V" run --limit 1G --trace s.json -- sh -c "\"$P\" keep 100; \"$P\" keep 50 temp 10" 2>err
expect_rc 0 $? "two members one after the other"
expect_eq "0 100 0 50 60 50 0" \
	"$(jqv s.json "[.traceEvents[] | select(.ph == \"C\" and .name == \"in use\")] | sort_by(.ts) | map(.args.bytes / $M | tostring) | join(\" \")")" \
	"group counter across two members"

# Rotation: with a 1 MiB bound, FILE and FILE.1 are complete documents and
# hold at most the bound together (plus one line). The program makes at
# least 64 single events in each of 100 intervals (a batch of 64 pairs, then
# a pause longer than an interval), over 1.2 MB of trace however fast the
# machine is.
ops=()
for ((i = 0; i < 100; i++)); do ops+=(many 64 sleep 11); done
"$V" run --limit 1G --trace r.json --trace-max 1M -- "$P" "${ops[@]}" 2>err
expect_rc 0 $? "rotated trace run"
[ -e r.json.1 ] || fail "no rotation at a 1 MiB bound"
jq . r.json >/dev/null || fail "r.json is not JSON"
jq . r.json.1 >/dev/null || fail "r.json.1 is not JSON"
total=$(($(stat -c %s r.json) + $(stat -c %s r.json.1)))
[ "$total" -le $((M + 4096)) ] || fail "rotated trace uses $total bytes, bound 1 MiB"
[ "$(jqv r.json .otherData.part)" -ge 2 ] || fail "the current file is not a later part"
# Only a regular file rotates. A device, a FIFO, or a symlink to one, is
# written in place: never renamed to FILE.1 with a regular file put where it
# was (as root, --trace /dev/null did that to /dev/null). A symlink to a
# regular file stays a symlink; the file it names rotates.
mkfifo fifo
ln -s fifo fifo.link
nodes="fifo fifo.link"
if [ "$(id -u)" = 0 ] && mknod null c 1 3 2>/dev/null; then
	ln -s null null.link
	nodes="$nodes null null.link"
fi
for n in $nodes; do
	case $n in fifo*) cat fifo >/dev/null & reader=$! ;; *) reader= ;; esac
	before=$(stat -c %F "$n")
	"$V" run --limit 1G --trace "$n" --trace-max 1M -- "$P" "${ops[@]}" 2>err
	expect_rc 0 $? "a trace to $n ($before)"
	[ "$(stat -c %F "$n")" = "$before" ] || fail "$n was a $before, now a $(stat -c %F "$n")"
	[ ! -e "$n.1" ] && [ ! -L "$n.1" ] || fail "$n was rotated to $n.1"
	[ -n "$reader" ] && wait "$reader"
done
[ "$(stat -c %F fifo)" = fifo ] || fail "the FIFO was replaced"
: >real.json
ln -s real.json via.json
"$V" run --limit 1G --trace via.json --trace-max 1M -- "$P" "${ops[@]}" 2>err
expect_rc 0 $? "a trace through a symlink"
[ -L via.json ] || fail "via.json is no longer a symlink"
[ -e real.json.1 ] || fail "the symlink's file did not rotate: $(ls)"
jq . via.json >/dev/null || fail "via.json (real.json) is not JSON"

"$V" run --trace x.json --trace-max 10K -- true 2>err
expect_rc 125 $? "--trace-max below 1M"
finish
