# run_cap_sizes.sh - caps too small for a CUDA context, sizes that are
# not whole bytes (#35): `--limit 4096` was accepted by run, cdi and kernel
# and every program's start-up then failed; `--limit 1.5` was kept as 1 B
# and shown so. A cap below a context's size (VR_CONTEXT_SMALL, 64 MiB) is
# said at parse time by each launcher and by `vramctl limit` (nothing
# refused: --count allocations makes it a real cap); a fraction of a byte
# is refused (125), naming the unit that was probably meant. And caps past
# the card: one job under --limit 10T is bounded by the card, never called
# OVERCOMMITTED (status, export, doctor); `limit GROUP 10T` says the card
# bounds it, as run does.
. "$VR_SRC/tests/cli/common.bash"
unset VRAMCTL_COUNT # as users run it: the cap counts the card
export HOME=$TMPDIR/home JUPYTER_DATA_DIR=$TMPDIR/jupyter JUPYTER_PATH=$TMPDIR/jpath
mkdir -p "$HOME" "$JUPYTER_PATH/kernels/py"
printf '{"argv": ["/bin/true", "{connection_file}"], "display_name": "t", "language": "python"}\n' \
	>"$JUPYTER_PATH/kernels/py/kernel.json"
note="is less than a CUDA context takes on the card (64 MiB and more"

"$V" run --limit 4096 -- true 2>err
expect_rc 0 $? "run --limit 4096: the command still runs"
expect_grep "vramctl: --limit: a cap of 4096 B $note" err "run: said at parse time"
"$V" run --limit 4096 --count allocations -- true 2>err
expect_rc 0 $? "run --count allocations"
[ ! -s err ] || fail "a small cap counting allocations is a real cap: nothing to say: $(cat err)"
"$V" run --limit 1G -- true 2>err
[ ! -s err ] || fail "a cap of 1 GiB: nothing to say: $(cat err)"
"$V" cdi generate --books "$TMPDIR/books" --limit 4K >spec.json 2>err
expect_rc 0 $? "cdi generate --limit 4K"
expect_grep "vramctl: --limit: a cap of 4096 B $note" err "cdi: said"
"$V" kernel install --limit 4K --from py --name small >out 2>err
expect_rc 0 $? "kernel install --limit 4K: $(cat err)"
expect_grep "vramctl: kernel install: --limit: a cap of 4096 B $note" err "kernel: said"
"$V" kernel remove small >/dev/null 2>&1

for bad in 1.5 2.25B; do
	"$V" run --limit "$bad" -- true 2>err
	expect_rc 125 $? "run --limit $bad"
	expect_grep "a size in bytes must be whole" err "run --limit $bad: the reason"
	"$V" cdi generate --books "$TMPDIR/books" --limit "$bad" >/dev/null 2>err
	expect_rc 125 $? "cdi generate --limit $bad"
done
expect_grep "'1.5G' is 1.5 GiB" <("$V" run --limit 1.5 -- true 2>&1) "the unit meant"

# limit: a running group lowered below a context's size, said.
mkfifo hold
"$V" run --group small --limit 1G -- sh -c 'read -r _ <hold' &
run=$!
exec 3>hold
for _ in $(seq 200); do [ -e "$VRAMCTL_REGISTRY_DIR/small.vrg" ] && break; sleep 0.05; done
"$V" limit small 4K >out 2>err
expect_rc 0 $? "limit small 4K: $(cat err)"
expect_grep "vramctl: limit: a cap of 4096 B $note" err "limit: said"
exec 3>&-
wait $run

# 10T: one job, bounded by the card; a member holds the group's device.
export VRAMSIM_DEVICES=16G
mkfifo hold2
LD_PRELOAD=$LIB VRAMCTL_GROUP=big VRAMCTL_LIMIT=10T "$VR_BUILD/tests/hook/memctl" <hold2 >ready 2>err &
m=$!
exec 4>hold2
for _ in $(seq 200); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
"$V" status --json >st.json
expect_rc 0 $? "status"
[ "$(jq '.devices[0].overcommitted' st.json)" = false ] ||
	fail "one job under 10T called overcommitted: $(jq -c '.devices[0]' st.json)"
"$V" status >st.txt
grep -q OVERCOMMITTED st.txt && fail "status: OVERCOMMITTED for one job: $(cat st.txt)"
"$V" doctor >doc.txt 2>&1
grep -E '^OK +gpu.overcommit' doc.txt >/dev/null || fail "doctor: $(grep overcommit doc.txt)"
"$V" limit big 11T >out 2>err
expect_rc 0 $? "limit big 11T"
expect_grep "the cap (11 TiB) is more than the card holds (16 GiB): the card's size is what bounds the group" \
	err "limit: the card bounds it, said"
exec 4>&-
wait $m
finish
