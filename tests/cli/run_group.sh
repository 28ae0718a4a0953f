# The registry side of a run: the run's group exists while it runs and its
# region file is gone after it; a named group joined with another cap says so.
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G
reg=$VRAMCTL_REGISTRY_DIR

# During the run the group's region is there; after it, gone.
"$V" run --limit 1G -- sh -c 'ls "$VRAMCTL_REGISTRY_DIR" | grep -F "$VRAMCTL_GROUP"' >during
expect_rc 0 $? "the run's region exists while it runs"
[ -s during ] || fail "no region file named after the group during the run"
[ -z "$(ls -A "$reg")" ] || fail "region left after the run: $(ls -A "$reg")"
# Also when the command fails or dies.
"$V" run --limit 1G -- sh -c 'kill -KILL $$'
expect_rc 137 $? "SIGKILL"
[ -z "$(ls -A "$reg")" ] || fail "region left after a killed command: $(ls -A "$reg")"

# The run itself holds its group open but is not one of its members: a
# command that has not touched a GPU leaves the group with none.
mkfifo up0 go0
"$V" run --group idle --limit 1G -- sh -c 'echo up >up0; read -r _ <go0' &
idle=$!
read -r _ <up0
got=$("$V" status --format prom 2>/dev/null | grep '^vramctl_group_members{group="idle"}')
echo go >go0
wait $idle
[ "$got" = 'vramctl_group_members{group="idle"} 0' ] ||
	fail "the launcher counted as a member: '$got'"

# A relative VRAMCTL_REGISTRY_DIR is refused (issue #25): made absolute by
# run, the same --group started from two directories was two groups with
# two caps. One line, 125, nothing run, no books made; with --report and
# --group alike. The library refuses it too (fail closed).
mkdir -p sub1 sub2
for args in "--limit 1G" "--group rel --limit 1G" "--limit 1G --report"; do
	# shellcheck disable=SC2086
	(cd sub1 && VRAMCTL_REGISTRY_DIR=rel "$V" run $args -- sh -c 'echo ran') >out 2>err
	expect_rc 125 $? "relative VRAMCTL_REGISTRY_DIR ($args)"
	expect_grep "VRAMCTL_REGISTRY_DIR=rel is not an absolute path" err "relative registry ($args)"
	[ "$(wc -l <err)" -eq 1 ] || fail "relative registry ($args): not one line: $(cat err)"
	[ ! -s out ] || fail "relative registry ($args): the command ran"
	[ ! -e sub1/rel ] || fail "relative registry ($args): books made in sub1/rel"
done
# Without a cap nothing is counted, so nothing is split: the command runs.
(cd sub2 && VRAMCTL_REGISTRY_DIR=rel "$V" run -- sh -c 'echo ran') >out 2>err
expect_rc 0 $? "relative VRAMCTL_REGISTRY_DIR without a cap"

# A named group, held open by a first run, joined with another cap.
mkfifo ready release
"$V" run --group shared --limit 1G -- sh -c 'echo up >ready; read -r _ <release' &
first=$!
read -r _ <ready
"$V" run --group shared --limit 2G -- sh -c 'printf "%s %s" "$VRAMCTL_GROUP" "$VRAMCTL_LIMIT"' >out 2>err
rc=$?
expect_rc 0 $rc "joining with a different cap runs"
expect_grep "group 'shared'" err "different cap message"
expect_grep "group's cap applies" err "different cap message"
[ "$(wc -l <err)" = 1 ] || fail "more than one message: $(cat err)"
# The joiner's processes get the group's cap, not the one it asked for.
[ "$(cat out)" = "shared 1G" ] || fail "the joiner's group and cap: '$(cat out)'"
# And a program under it sees the group's 1 GiB, with no second warning.
if has_cap; then
	"$V" run --group shared --limit 2G -- "$VR_BUILD/libexec/vramctl-demo-app" >out 2>err
	rc=$?
	expect_rc 0 $rc "a program in the joined group"
	expect_grep "has 1 GiB in total" out "the group's cap applies to the joiner"
	[ "$(grep -c "group's cap applies\|different cap" err)" = 1 ] ||
		fail "warned more than once: $(cat err)"
fi
# The same cap: no message.
"$V" run --group shared --limit 1G -- true 2>err
expect_rc 0 $? "joining with the same cap"
[ ! -s err ] || fail "message for the same cap: $(cat err)"
# The same cap in other words (a hand-set environment, a site's script):
# caps are amounts, "1024M" is the group's "1G", so nothing is said.
if has_cap; then
	VRAMCTL_GROUP=shared VRAMCTL_LIMIT=1024M LD_PRELOAD=$LIB \
		"$VR_BUILD/libexec/vramctl-demo-app" >out 2>err
	expect_rc 0 $? "a program joining with the same cap in other words"
	! grep "different cap" err || fail "'1024M' called a different cap than '1G': $(cat err)"
	expect_grep "has 1 GiB in total" out "the group's cap, asked as 1024M"
fi
echo go >release
wait $first
expect_rc 0 $? "first member"

# Later, nobody alive: a new run with another cap starts the group afresh.
"$V" run --group shared --limit 2G -- true 2>err
expect_rc 0 $? "a stale group is started afresh"
[ ! -s err ] || fail "a stale group's cap was applied: $(cat err)"

# One group-name rule: `run` refuses a name the registry refuses, as an
# option error (nothing runs), in the registry's own words, which are also
# what the library says when it meets the name in VRAMCTL_GROUP.
for name in .x .hidden "a b" a123456789b123456789c123456789d123456789e123456789f123456789g1234; do
	rm -f marker
	"$V" run --group "$name" -- touch marker 2>err
	expect_rc 125 $? "--group '$name'"
	expect_grep "vramctl: --group: bad group name '$name': use 1 to 64 of" err "--group '$name'"
	[ "$(wc -l <err)" = 1 ] || fail "--group '$name': more than one message: $(cat err)"
	[ ! -e marker ] || fail "--group '$name': the command ran"
done
"$V" run --group a123456789b123456789c123456789d123456789e123456789f123456789g123 --limit 1G -- true
expect_rc 0 $? "a 64-character group name"
"$V" run --group .x --limit 1G -- true 2>err
run_says=$(grep -o "bad group name '[^']*': [^;]*" err)
if has_cap; then
	VRAMCTL_LIMIT=1G VRAMCTL_GROUP=.x LD_PRELOAD=$LIB \
		"$VR_BUILD/libexec/vramctl-demo-app" >out 2>err
	lib_says=$(grep -o "bad group name '[^']*': [^;]*" err)
	[ -n "$run_says" ] && [ "$run_says" = "$lib_says" ] ||
		fail "run and the library word a bad group name differently: '$run_says' vs '$lib_says'"
fi

# A cap asked for is never lost (issue 29): the group capped GPU 0 only, so a
# run that asks for a cap on every GPU is refused (it would run uncapped on
# GPU 1), with the device named.
mkfifo up1 go1
VRAMSIM_DEVICES=16G,16G "$V" run --group half --limit 0=1G -- sh -c 'echo up >up1; read -r _ <go1' &
half=$!
read -r _ <up1
VRAMSIM_DEVICES=16G,16G "$V" run --group half --limit 1G -- true 2>err
rc=$?
echo go >go1
wait $half
expect_rc 125 $rc "a cap on every GPU joining a group that left GPU 1 uncapped"
expect_grep "group 'half' leaves GPU 1 uncapped and this run asks for a cap of 1 GiB there" err \
	"the refusal names the device and why"
# A process capped by the library alone (no launcher to refuse it) keeps its
# cap on that GPU in its own books, and says so.
if has_cap; then
	VRAMSIM_DEVICES=16G,16G "$V" run --group half2 --limit 0=1G -- sh -c 'echo up >up1; read -r _ <go1' &
	half=$!
	read -r _ <up1
	VRAMSIM_DEVICES=16G,16G CUDA_VISIBLE_DEVICES=1 LD_PRELOAD=$LIB VRAMCTL_GROUP=half2 \
		VRAMCTL_LIMIT=1G "$VR_BUILD/tests/report/memprog" deny 1500 2>err
	rc=$?
	echo go >go1
	wait $half
	expect_rc 0 $rc "1500 MiB past a 1 GiB cap on a GPU the group left uncapped (memprog deny)"
	# Its GPU 0 is the card status calls GPU 1 (CUDA_VISIBLE_DEVICES=1): the
	# line names it by its UUID too.
	u1=$(VRAMSIM_DEVICES=16G,16G "$V" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][1]["uuid"])')
	expect_grep "the group leaves GPU 0 (${u1:-GPU-}" err "the library's line names the card"
	expect_grep "uncapped and this process asks for a cap of 1 GiB there: that cap holds for this process alone" \
		err "the library's line"
fi
finish
