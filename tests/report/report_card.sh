# vramctl run --report on the card (#24): a program on the simulator with a
# 300 MiB context (VRAMSIM_CONTEXT_BYTES) under --limit 1G. The report shows
# an overhead near 300 MiB per device and process, a peak on the card of at
# least the peak of allocations plus that, and the peak of allocations kept
# apart (exactly what was allocated); two processes' overheads are summed.
. "$VR_SRC/tests/report/lib.bash"
sim_only || { echo "skip: needs the simulator's device sizes"; exit 77; }
need_cap
export VRAMSIM_CONTEXT_BYTES=300M
unset VRAMCTL_COUNT # the cap counts the card, as users run it
MIB=1048576
# The overhead is NVML's figure for the process less its blocks: the
# context, and at most what the driver rounds each block up to (2 MiB pages).
near_300m() {
	[ "$1" -ge $((300 * MIB)) ] && [ "$1" -le $((308 * MIB)) ] ||
		fail "$2: $1 bytes, expected 300 MiB (up to 308 MiB)"
}

"$V" run --limit 1G --report=r.json -- "$P" keep 200 temp 300 2>err
expect_rc 0 $? "a program with a 300 MiB context"
jq . r.json >/dev/null || fail "the report is not JSON"
expect_eq $((500 * MIB)) "$(jqv r.json '.devices[0].peak_bytes')" "peak of allocations (500 MiB)"
oh=$(jqv r.json '.devices[0].overhead_peak_bytes')
if [ "$oh" = null ]; then
	fail "no overhead measured on the card (the library never called vr_rec_overhead): $(cat err)"
	finish
fi
near_300m "$oh" "the device's overhead"
near_300m "$(jqv r.json '.devices[0].overhead_at_end_bytes')" "the device's overhead at the end"
card=$(jqv r.json '.devices[0].card_peak_bytes')
[ "$card" -ge $((500 * MIB + 300 * MIB)) ] ||
	fail "peak on the card $card below the peak of allocations + the context (800 MiB)"
[ "$card" -le $((1024 * MIB)) ] || fail "peak on the card $card past the cap"
expect_eq true "$(jqv r.json '.devices[0].card_peak_is_group')" "the group's peak on the card"
expect_eq $(((card + MIB - 1) / MIB * MIB)) "$(jqv r.json '.devices[0].right_size_bytes')" \
	"the right size holds the card's peak"
# The same per process.
pd='.processes[0].devices[0]'
expect_eq $((500 * MIB)) "$(jqv r.json "$pd.peak_bytes")" "process's peak of allocations"
near_300m "$(jqv r.json "$pd.overhead_peak_bytes")" "process's overhead"
[ "$(jqv r.json "$pd.card_peak_bytes")" -ge $((800 * MIB)) ] ||
	fail "process's peak on the card: $(jqv r.json "$pd.card_peak_bytes")"

# The text says which peak is which.
"$V" run --limit 1G --report -- "$P" keep 200 temp 300 2>err
expect_rc 0 $? "text report"
expect_grep "the group's peak of allocations 500 MiB" err "peak of allocations (text)"
expect_grep "on the card (allocations + overhead: contexts, modules, the driver's own use): peak " err "card line"
expect_grep "GPU 0: peak of allocations 500 MiB at" err "member's peak of allocations"
expect_grep "    on the card: peak " err "member's card line"
grep -q "not measured" err && fail "the overhead was not measured: $(cat err)"

# Two processes, one context each: their overheads summed.
"$V" run --limit 1G --report=two.json -- sh -c "\"$P\" keep 100 & \"$P\" keep 100; wait" 2>err
expect_rc 0 $? "two processes"
two=$(jqv two.json '.devices[0].overhead_peak_bytes')
[ "$two" -ge $((600 * MIB)) ] && [ "$two" -le $((616 * MIB)) ] ||
	fail "two contexts summed: $two bytes, expected 600 MiB (up to 616 MiB)"
"$V" run --limit 1G --report -- sh -c "\"$P\" keep 100 & \"$P\" keep 100; wait" 2>err
expect_grep "(summed over 2 processes)" err "two processes (text)"

# The old meaning (--count allocations): nothing measured on the card, said.
VRAMCTL_COUNT=allocations "$V" run --limit 1G --report=a.json -- "$P" keep 200 2>err
expect_rc 0 $? "counting allocations"
expect_eq null "$(jqv a.json '.devices[0].card_peak_bytes')" "no card figure when counting allocations"
expect_eq $((200 * MIB)) "$(jqv a.json '.devices[0].right_size_bytes')" "right size of allocations"
finish
