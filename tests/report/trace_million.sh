# A million allocation+free pairs under --trace: the trace stays within its
# documented size (docs/report.md: at most VR_REC_PER_INTERVAL single events
# per process and 10 ms interval, plus sums), and the singles plus the sums
# add up to exactly a million allocations and a million frees.
. "$VR_SRC/tests/report/lib.bash"
sim_only || { echo "skip: needs the simulator"; exit 77; }
need_cap
N=1000000
# Under TSan a million pairs take over a minute on an idle machine: a
# quarter of them there keeps the test inside the runner's time limit when
# the machine is shared (the same bounds and sums are checked).
case $VR_BUILD in *-tsan) N=250000 ;; esac
"$V" run --limit 1G --trace t.json --report=r.json -- "$P" many $N 2>err
expect_rc 0 $? "a million pairs"
expect_eq $N "$(jqv r.json '.processes[0].devices[0].allocations')" "report: allocations"
expect_eq $N "$(jqv r.json '.processes[0].devices[0].frees')" "report: frees"
pid=$(jqv r.json '.processes[0].pid')
counts=$(jq -r --argjson p "$pid" '
	[.traceEvents[] | select(.pid == $p and (.name == "GPU 0 in use" or (.name | test("summed"))))] as $e
	| reduce range(0; $e | length) as $i ({prev: 0, a: 0, f: 0};
		if $e[$i].name == "allocations summed" then .a += $e[$i].args.count
		elif $e[$i].name == "frees summed" then .f += $e[$i].args.count
		elif $i > 0 and ($e[$i - 1].name | test("summed")) then .prev = $e[$i].args.bytes
		elif $e[$i].args.bytes > .prev then .a += 1 | .prev = $e[$i].args.bytes
		elif $e[$i].args.bytes < .prev then .f += 1 | .prev = $e[$i].args.bytes
		else . end)
	| "\(.a) \(.f)"' t.json)
expect_eq "$N $N" "$counts" "trace: singles + sums"
# The documented bound: 16 KiB + per interval of 10 ms (and one more) at most
# 64 singles of 2 lines (~250 bytes) and 2 sums of 3 lines (~600 bytes).
span=$(jqv t.json '[.traceEvents[] | select(.ts) | .ts] | max')
intervals=$(( ${span%.*} / 10000 + 2 ))
bound=$(( 16384 + intervals * (64 * 250 + 2 * 600) ))
size=$(stat -c %s t.json)
echo "note: $N pairs, ${span%.*} us, $size bytes of trace (bound $bound)"
[ "$size" -le "$bound" ] || fail "trace of $size bytes over its bound $bound"
finish
