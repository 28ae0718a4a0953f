# `vramctl demo`: three acts on the simulated GPU, the library's denial line,
# and nothing left behind in TMPDIR.
. "$VR_SRC/tests/cli/common.bash"
has_cap || { echo "skipped: the demo needs the real library, which crashes programs in this TSan build"; exit 77; }
# The demo runs as a user runs it: the cap counts what the card holds.
unset VRAMCTL_COUNT
"$V" demo >out 2>&1
expect_rc 0 $? "vramctl demo"
expect_grep "=== Act 1: no cap ===" out "act 1 header"
expect_grep "=== Act 2: vramctl run --limit 1G ===" out "act 2 header"
expect_grep "=== Act 3: vramctl run --limit 1G --growth ===" out "act 3 header"
expect_grep "simulated 16 GiB GPU" out "which GPU"
expect_grep "GPU 0 has 16 GiB in total" out "act 1 sees the whole GPU"
expect_grep "GPU 0 has 1 GiB in total" out "under the cap it sees 1 GiB"
expect_grep "vramctl: denied" out "the library's denial line"
expect_grep "growth switch is set" out "act 3 grows on demand"
# Act 2: what the app says it preallocates is what vramctl says it holds,
# in the same words (#25: "921.6 MiB" beside "922 MiB" on one screen).
sed -n '/=== Act 2/,/=== Act 3/p' out >act2
asked=$(sed -n 's/.*preallocating 90% of free memory: \(.*\) in one block.*/\1/p' act2)
[ -n "$asked" ] || fail "act 2: no preallocation line"
expect_grep "(this process $asked allocated + " act2 "act 2: vramctl's figure is the app's ($asked)"
expect_grep "the program now holds $asked" act2 "act 2: the app's own total"
# Act 3 takes 3 steps of 256 MiB under a 1 GiB cap (the simulated context,
# 64 MiB, counts: the cap is what the card holds), then is refused.
sed -n '/=== Act 3/,$p' out >act3
expect_grep "3 steps granted" act3 "act 3 grows to the cap"
[ -z "$(ls -A "$TMPDIR")" ] || fail "demo left files in TMPDIR: $(ls -A "$TMPDIR")"
"$V" demo --bogus 2>err
expect_rc 125 $? "demo: unknown option"
# --real with no usable driver: one line, and no act runs (#25).
VRAMCTL_DRIVER=$TMPDIR/none/libcuda.so.1 "$V" demo --real >out 2>err
expect_rc 125 $? "demo --real with no driver"
grep -q "=== Act" out && fail "demo --real ran acts with no driver: $(cat out)"
[ "$(wc -l <err)" = 1 ] || fail "demo --real with no driver: not one line: $(cat err)"
expect_grep "cannot load the CUDA driver" err "demo --real: the reason"
finish
