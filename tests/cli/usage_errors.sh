# usage_errors.sh - every command says a usage error the same way (#25):
# one line on stderr naming the bad argument and pointing to --help, and
# exit status 125 (vramctl(1), EXIT STATUS; src/common/exit.h).
. "$VR_SRC/tests/cli/common.bash"

# one_line WHAT CMD...: CMD fails with 125 and one line naming its last word.
one_line() {
	local what=$1 last
	shift
	last=${*: -1}
	"$V" "$@" >out 2>err
	expect_rc 125 $? "$what"
	[ "$(wc -l <err)" = 1 ] || { fail "$what: not one line:"; sed 's/^/      /' err >&2; }
	expect_grep "'$last'" err "$what: names the argument"
	expect_grep "--help" err "$what: points to --help"
	[ ! -s out ] || fail "$what: wrote to stdout: $(head -3 out)"
}

for cmd in run doctor status top export demo plot "cdi generate" "kernel install" \
	"kernel remove"; do
	# shellcheck disable=SC2086
	one_line "$cmd --bogus" $cmd --bogus
done
one_line "doctor --json=1" doctor --json=1
one_line "doctor --device x" doctor --device x
one_line "doctor extra" doctor extra
one_line "status extra" status extra
one_line "kernel list extra" kernel list extra
one_line "kernel bogus" kernel bogus
one_line "cdi bogus" cdi bogus
one_line "an unknown command" bogus
"$V" run --limit >out 2>err
expect_rc 125 $? "run --limit with no value"
[ "$(wc -l <err)" = 1 ] || fail "run --limit with no value: not one line: $(cat err)"
expect_grep "run: option --limit needs a value ('vramctl run --help')" err "run --limit: the line"
"$V" run >out 2>err
expect_rc 125 $? "run with no command"
[ "$(wc -l <err)" = 1 ] || fail "run with no command: not one line: $(cat err)"
expect_grep "no command given ('vramctl run --help')" err "run with no command: the line"
one_line "completion fish" completion fish
expect_grep "not supported" err "completion fish: says fish is not supported"
for cmd in doctor status top export; do
	"$V" $cmd --registry >out 2>err
	expect_rc 125 $? "$cmd --registry without a value"
	[ "$(wc -l <err)" = 1 ] || fail "$cmd --registry: not one line: $(cat err)"
	expect_grep "--registry needs a value" err "$cmd --registry: the message"
done

# vramctl help COMMAND is COMMAND --help.
for cmd in run doctor status top kernel; do
	"$V" help $cmd >out 2>err
	expect_rc 0 $? "help $cmd"
	expect_grep "usage: vramctl $cmd" out "help $cmd prints $cmd's help"
done
"$V" help bogus >out 2>err
expect_rc 125 $? "help of an unknown command"

# top --help does not claim NO_COLOR is set.
(unset NO_COLOR; "$V" top --help) >out 2>&1
grep -q "^NO_COLOR set" out && fail "top --help says NO_COLOR set when it is not"
# top without a terminal: one line, no escape codes in the file (#25).
"$V" top >out 2>err </dev/null
expect_rc 125 $? "top > file"
[ ! -s out ] || fail "top > file wrote to the file: $(od -c out | head -3)"
[ "$(wc -l <err)" = 1 ] || fail "top > file: not one line: $(cat err)"
expect_grep "not a terminal" err "top > file: the message"
finish
