# The commands every job starts with load no heavy library: `vramctl`
# itself needs none of ncurses, libmicrohttpd or gnutls; the commands that
# do (top, export) are their own programs in libexec, exec'd by vramctl,
# with their arguments and exit statuses passed through, each with only the
# files it uses.
. "$VR_SRC/tests/cli/common.bash"

heavy='ncurses|microhttpd|gnutls|json-c|cairo|libdw'
ldd "$V" >libs 2>&1 || fail "ldd $V: $(cat libs)"
if grep -E "$heavy" libs >found; then
	fail "vramctl loads heavy libraries at every start: $(tr '\n' ' ' <found)"
fi
for cmd in top export; do
	[ -x "$VR_BUILD/libexec/vramctl-$cmd" ] || fail "no libexec/vramctl-$cmd"
	"$V" "$cmd" --help >out 2>&1
	expect_rc 0 $? "vramctl $cmd --help"
	expect_grep "usage: vramctl $cmd" out "vramctl $cmd --help"
	"$V" "$cmd" --no-such-option >out 2>&1
	expect_rc 125 $? "vramctl $cmd with a bad option"
done

# Each helper carries the files it uses, not every command's (vramctl-top
# carried cdi, doctor and kernel), and the mark the library looks for
# (#35, the house).
if command -v nm >/dev/null; then
	for cmd in top export plot run; do
		nm "$VR_BUILD/libexec/vramctl-$cmd" >syms 2>/dev/null || continue
		grep -qw vramctl_cli_v1 syms || fail "vramctl-$cmd lacks vramctl_cli_v1"
		for other in cmd_cdi cmd_doctor cmd_kernel cmd_limit cmd_status; do
			grep -qw "$other" syms && fail "vramctl-$cmd carries $other"
		done
	done
fi

# A copy of vramctl without its libexec says what is missing, status 125.
mkdir -p alone
cp "$V" alone/vramctl
alone/vramctl top >out 2>&1
expect_rc 125 $? "top without its helper"
expect_grep "cannot find vramctl-top" out "top without its helper"
finish
