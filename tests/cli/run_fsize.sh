# A file size limit (`ulimit -f`) below what vramctl writes: the books'
# 4 KiB door file. Writing past the limit raises SIGXFSZ, which killed the
# program (exit 153) before vramctl checked the limit first.
#   - `vramctl run` says why and exits 125, the command never ran;
#   - a capped program started with the library alone keeps its own books
#     (the cap applies to it alone: still enforced) and runs to the end.
# Output goes to a pipe read outside the limit (a file would be the shell's
# own write past it).
. "$VR_SRC/tests/cli/common.bash"
case $VR_BUILD in
*-tsan) echo "skipped: the TSan runtime itself dies under ulimit -f 0 (SIGXFSZ at start)"; exit 77 ;;
esac
export VRAMSIM_DEVICES=16G
P=$VR_BUILD/tests/report/memprog

# The simulated card's state file exists before the limit applies.
"$P" temp 1 || fail "memprog without a limit"

(ulimit -f 0; "$V" run --limit 1G -- touch ran; echo "rc=$?") 2>&1 | cat >run.txt
expect_grep "rc=125" run.txt "vramctl run under ulimit -f 0"
expect_grep "file size limit" run.txt "vramctl run says why"
[ ! -e ran ] || fail "the command ran"

if has_cap; then
	(ulimit -f 0; LD_PRELOAD=$LIB VRAMCTL_LIMIT=1G "$P" keep 600 deny 600; echo "rc=$?") 2>&1 |
		cat >lib.txt
	expect_grep "rc=0" lib.txt "a capped program under ulimit -f 0"
	expect_grep "file size limit" lib.txt "the library says why"
	expect_grep "keeps its own books" lib.txt "and what it does instead"
fi
finish
