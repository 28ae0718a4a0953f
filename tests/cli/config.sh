# The site's configuration file (vramctl.conf(5)), given here through
# VRAMCTL_CONFIG (a second file, read after /etc/vramctl/vramctl.conf, which
# can only tighten): the default cap applies to a run without --limit; the
# maximum holds against --limit, VRAMCTL_LIMIT set by hand and no cap at
# all; a malformed file is one message naming its line, and nothing runs
# past it uncapped.
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G
APP=$VR_BUILD/libexec/vramctl-demo-app
conf=$TMPDIR/site.conf
export VRAMCTL_CONFIG=$conf
total() { sed -n 's/.*has \([0-9.]* [KMGT]*i*B\) in total.*/\1/p' "$1"; }

# default_limit: a run without --limit gets it.
printf 'default_limit = 2G\n' >"$conf"
"$V" run -- sh -c 'echo "$VRAMCTL_LIMIT"' >out
expect_rc 0 $? "a run with the default cap"
[ "$(cat out)" = 2G ] || fail "default_limit not applied: '$(cat out)'"
# An enclosing run's cap is passed on, not replaced by the default.
VRAMCTL_LIMIT=1G "$V" run -- sh -c 'echo "$VRAMCTL_LIMIT"' >out
[ "$(cat out)" = 1G ] || fail "a nested run took the default over its parent's cap: '$(cat out)'"
"$V" run --limit 3G -- sh -c 'echo "$VRAMCTL_LIMIT"' >out
[ "$(cat out)" = 3G ] || fail "--limit lost to the default: '$(cat out)'"
# A guarantee within the default cap needs no --limit (issue #26); one
# above it is refused.
"$V" run --guarantee 1G -- sh -c 'echo "$VRAMCTL_GUARANTEE"' >out 2>err
expect_rc 0 $? "a guarantee under the default cap"
[ "$(cat out)" = 1G ] || fail "--guarantee under default_limit: '$(cat out)' $(cat err)"
"$V" run --guarantee 3G -- true 2>err
expect_rc 125 $? "a guarantee above the default cap"
expect_grep "is above" err "a guarantee above the default cap"

if has_cap && sim_only; then
	# max_limit holds against the command line...
	printf 'default_limit = 8G\nmax_limit = 2G\n' >"$conf"
	"$V" run --limit 4G -- "$APP" >out 2>err
	expect_rc 0 $? "a run above the maximum"
	[ "$(total out)" = "2 GiB" ] || fail "--limit 4G above max 2G: total $(total out)"
	expect_grep "above the site's maximum, 2 GiB" err "the lowered cap is said"
	[ "$(grep -c maximum err)" = 1 ] || fail "said more than once: $(cat err)"
	# ...the default above it...
	"$V" run -- "$APP" >out 2>err
	[ "$(total out)" = "2 GiB" ] || fail "default 8G above max 2G: total $(total out)"
	# ...the environment set by hand...
	VRAMCTL_LIMIT=8G LD_PRELOAD=$LIB "$APP" >out 2>err
	[ "$(total out)" = "2 GiB" ] || fail "VRAMCTL_LIMIT=8G above max 2G: total $(total out)"
	expect_grep "lowered to the site's maximum" err "the library says it"
	# ...and no cap at all: the library alone applies the maximum.
	LD_PRELOAD=$LIB "$APP" >out 2>err
	[ "$(total out)" = "2 GiB" ] || fail "no VRAMCTL_LIMIT under max 2G: total $(total out)"
	# A guarantee is checked against the cap as lowered to the maximum.
	"$V" run --limit 4G --guarantee 3G -- true 2>err
	expect_rc 125 $? "a guarantee above the maximum"
	expect_grep "the guarantee on GPU 0 (3 GiB) is above its cap (2 GiB)" err "above the maximum"
	# A cap below the maximum stays.
	"$V" run --limit 1G -- "$APP" >out 2>err
	[ "$(total out)" = "1 GiB" ] || fail "--limit 1G under max 2G: total $(total out)"
	grep -q "maximum" err && fail "a message for a cap under the maximum: $(cat err)"
	# A group fixed above the maximum (before it was set) cannot carry a
	# member past it: the member keeps its own books under the maximum.
	: >"$conf"
	mkfifo ready release
	"$V" run --group big --limit 8G -- sh -c 'echo up >ready; read -r _ <release' &
	holder=$!
	read -r _ <ready
	printf 'max_limit = 2G\n' >"$conf"
	VRAMCTL_GROUP=big VRAMCTL_LIMIT=8G LD_PRELOAD=$LIB "$APP" >out 2>err
	[ "$(total out)" = "2 GiB" ] || fail "a group above the maximum: total $(total out)"
	expect_grep "above the site's maximum" err "the group above the maximum is said"
	echo go >release
	wait $holder
	# allow_above_max = yes: the maximum is only the default.
	printf 'max_limit = 2G\nallow_above_max = yes\n' >"$conf"
	"$V" run --limit 4G -- "$APP" >out 2>err
	[ "$(total out)" = "4 GiB" ] || fail "allow_above_max = yes: total $(total out)"
	"$V" run -- sh -c 'echo "$VRAMCTL_LIMIT"' >out
	[ "$(cat out)" = 2G ] || fail "max_limit as the default: '$(cat out)'"
	LD_PRELOAD=$LIB "$APP" >out 2>err
	[ "$(total out)" = "16 GiB" ] || fail "an advisory maximum applied by the library: $(total out)"
fi

# registry_dir: the books go where the admin says (%u: the uid).
mkdir -m 0700 "$TMPDIR/books-$(id -u)"
printf 'registry_dir = %s/books-%%u\n' "$TMPDIR" >"$conf"
(unset VRAMCTL_REGISTRY_DIR; "$V" run --group here --limit 1G -- true)
ls "$TMPDIR/books-$(id -u)" | grep -q here || fail "registry_dir not used: $(ls -A "$TMPDIR/books-$(id -u)")"

# export_listen: the exporter's default address.
printf 'export_listen = 127.0.0.1:bogus\n' >"$conf"
timeout 5 "$V" export >out 2>err
expect_rc 125 $? "export with a bad export_listen"
expect_grep "127.0.0.1:bogus" err "export names the configured address"

# A malformed file: one message naming the line; nothing runs uncapped.
printf 'max_limit = 2G\ncolour = blue\n' >"$conf"
"$V" run --limit 1G -- touch ran 2>err
expect_rc 125 $? "run with a malformed file"
[ ! -e ran ] || fail "the command ran past a malformed file"
expect_grep "$conf:2: unknown key 'colour'" err "the message names file and line"
expect_grep "refused until the file is fixed" err "the outcome is said"
if has_cap && sim_only; then
	LD_PRELOAD=$LIB "$APP" >out 2>err
	expect_grep "$conf:2: unknown key 'colour'" err "the library's message"
	expect_grep "fail closed" err "the library fails closed"
	[ "$(total out)" = "0 B" ] || fail "a malformed file left the program uncapped: $(total out)"
fi
# status only reads: it still runs, and says what run says.
"$V" status >out 2>&1
[ $? != 125 ] || fail "status refused over a malformed config"
expect_grep "$conf:2: unknown key 'colour'" out "status names the file and line"
"$V" status --json >out 2>&1
expect_grep "$conf:2: unknown key 'colour'" out "status --json names the file and line"
# doctor names the file, and blames it rather than another library (#25).
printf 'max_limt = 4G\n' >"$conf"
"$V" doctor >out 2>&1
expect_rc 1 $? "doctor over a malformed file"
expect_grep "$conf:1: unknown key 'max_limt'" out "doctor names the file and line"
grep -q "another library that replaces dlsym" out && fail "doctor blames another library for a bad config"
grep -q "NOT capped" out && fail "doctor says NOT capped over a bad config: $(grep 'NOT capped' out)"
"$V" doctor --json >out 2>&1
expect_grep "$conf:1: unknown key 'max_limt'" out "doctor --json names the file and line"

# A file VRAMCTL_CONFIG names that is missing is an error too (issue #25:
# it was asked for, and may have held a maximum): the same outcome.
rm -f "$conf" ran
"$V" run --limit 1G -- touch ran 2>err
expect_rc 125 $? "run with VRAMCTL_CONFIG naming a missing file"
[ ! -e ran ] || fail "the command ran past a missing VRAMCTL_CONFIG file"
expect_grep "$conf: cannot open: No such file or directory (named in VRAMCTL_CONFIG)" err \
	"the missing file is named"
if has_cap && sim_only; then
	LD_PRELOAD=$LIB "$APP" >out 2>err
	expect_grep "fail closed" err "the library fails closed on a missing VRAMCTL_CONFIG file"
	[ "$(total out)" = "0 B" ] || fail "a missing VRAMCTL_CONFIG file left the program uncapped"
fi
VRAMCTL_CONFIG= "$V" run --limit 1G -- true
expect_rc 0 $? "an empty VRAMCTL_CONFIG names no file"
finish
