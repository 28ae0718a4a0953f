# The commands every job starts with load no heavy library: `vramctl`
# itself needs none of ncurses, libmicrohttpd or gnutls; the commands that
# do (top, export) are their own programs in libexec, exec'd by vramctl,
# with their arguments and exit statuses passed through.
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

# A copy of vramctl without its libexec says what is missing, status 125.
mkdir -p alone
cp "$V" alone/vramctl
alone/vramctl top >out 2>&1
expect_rc 125 $? "top without its helper"
expect_grep "cannot find vramctl-top" out "top without its helper"
finish
