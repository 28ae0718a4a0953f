# The Debian packages: `make deb` builds them from the tree's files (as from
# a clean clone), lintian passes them with no error or warning (pedantic and
# info tags included), and they install with dpkg -i into a fresh root,
# where the installed vramctl finds its library in the private multiarch
# directory, runs its demo, shows its man pages and has its completion;
# vramctl-slurm's snippet changes nothing until enabled; removal leaves only
# the admin's configuration files and purge removes those too.
# Built and checked once, in the release build's run.
. "$VR_SRC/tests/lib.bash"
case $VR_BUILD in
*-release) ;;
*) echo "skip: the packages are built and tested once, in the release build's run"; exit 77 ;;
esac
for t in dpkg-buildpackage dh lintian git; do
	command -v $t >/dev/null || { echo "skip: $t not installed (scripts/install-deps)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "skip: installing into a fresh root needs root"; exit 77; }
git -C "$VR_SRC" rev-parse --git-dir >/dev/null 2>&1 || { echo "skip: not a git tree"; exit 77; }

# debian/rules takes one job count from DEB_BUILD_OPTIONS, the last
# parallel= of the list (dpkg's rule), whatever else it holds.
for opts in "parallel=2" "parallel=2 parallel=2" "parallel=8 nocheck parallel=3" "nocheck" ""; do
	want=$(echo " $opts" | sed -n 's/.* parallel=\([0-9]*\).*/\1/p')
	got=$(cd "$VR_SRC/debian" && DEB_BUILD_OPTIONS=$opts make -s -n -f rules override_dh_auto_build 2>/dev/null |
		head -n 1 | awk '{ print $2, $3 }')
	case $got in
	"-j${want:-1} BUILD=debian/build") ;;
	*) fail "DEB_BUILD_OPTIONS='$opts': debian/rules runs 'make $got ...', not 'make -j${want:-1} BUILD=...'" ;;
	esac
done

# As on a build machine with no driver: neither the simulated driver nor any
# other libcuda.so.1 on the library path; as a build daemon (and
# dpkg-buildpackage -j2) does, with DEB_BUILD_OPTIONS=parallel=2.
DEB_BUILD_OPTIONS=parallel=2 env -u LD_LIBRARY_PATH -u LD_PRELOAD \
	make -s -C "$VR_SRC" deb BUILD="$TMPDIR/build" >build.log 2>&1 || {
	tail -n 30 build.log
	fail "make deb failed (DEB_BUILD_OPTIONS=parallel=2)"
	finish
}
grep -q -- "make -j2 BUILD=debian/build" build.log ||
	fail "make deb with DEB_BUILD_OPTIONS=parallel=2 did not build with -j2: $(grep -m1 -- ' -j' build.log)"
deb=$TMPDIR/build/deb
version=$(awk 'NR == 1 { gsub(/[()]/, "", $2); print $2 }' "$VR_SRC/debian/changelog")
for p in vramctl vramctl-slurm; do
	[ -f "$deb/${p}_${version}_amd64.deb" ] || fail "no $p package for version $version: $(ls "$deb")"
done
[ "$(dpkg-deb -f "$deb/vramctl_${version}_amd64.deb" Version)" = "$version" ] ||
	fail "the package's version is not debian/changelog's"

# The packages never claim the driver's sonames (the simulated driver in
# vramctl/sim/ is private) and never depend on a driver.
dpkg-deb -e "$deb/vramctl_${version}_amd64.deb" control
! grep -qE 'libcuda|libnvidia-ml' control/shlibs 2>/dev/null ||
	fail "the package's shlibs name the driver's libraries: $(cat control/shlibs)"
! dpkg-deb -f "$deb/vramctl_${version}_amd64.deb" Depends | grep -qE 'libcuda|nvidia' ||
	fail "the package depends on a driver: $(dpkg-deb -f "$deb/vramctl_${version}_amd64.deb" Depends)"

lintian -I --pedantic "$deb/vramctl_${version}_amd64.changes" >lintian.out 2>&1
grep -v 'running with root privileges' lintian.out >lintian.tags
[ ! -s lintian.tags ] || { fail "lintian:"; sed 's/^/      /' lintian.tags >&2; }

# A fresh root with an empty dpkg database (the system's own libraries are
# what the binaries load, hence --force-depends).
R=$TMPDIR/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
dp() { dpkg --root="$R" --force-depends --force-not-root --log=/dev/null "$@"; }
dp -i "$deb/vramctl_${version}_amd64.deb" "$deb/vramctl-slurm_${version}_amd64.deb" >dpkg.log 2>&1 ||
	{ cat dpkg.log; fail "dpkg -i failed"; }
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in usr/bin/vramctl "usr/lib/$triplet/vramctl/libvramctl.so" \
	"usr/lib/$triplet/vramctl/sim/libcuda.so.1" usr/libexec/vramctl/vramctl-demo-app \
	usr/libexec/vramctl/vramctl-top usr/libexec/vramctl/vramctl-export "usr/lib/$triplet/vramctl/ld.so.preload" \
	usr/share/man/man1/vramctl.1.gz usr/share/man/man1/vramctl-kernel.1.gz \
	usr/share/man/man5/vramctl.conf.5.gz usr/share/bash-completion/completions/vramctl \
	usr/share/zsh/vendor-completions/_vramctl etc/vramctl/vramctl.conf \
	usr/share/man/man1/vramctl-preload.1.gz usr/lib/tmpfiles.d/vramctl.conf \
	"usr/lib/$triplet/slurm-wlm/vramctl.so" etc/slurm/plugstack.conf.d/vramctl.conf; do
	[ -e "$R/$f" ] || fail "not installed: /$f"
done
# conffiles: the admin's files.
grep -q '^ /etc/vramctl/vramctl.conf ' "$R/var/lib/dpkg/status" ||
	fail "/etc/vramctl/vramctl.conf is not a conffile"

# The library's path that vramctl(1) gives for LD_PRELOAD is the package's.
named=$(sed -n 's/^LD_PRELOAD=\([^ ]*\) .*/\1/p' "$VR_SRC/man/vramctl.1" | sed 's/\\-/-/g; s/x86_64-linux-gnu/'"$triplet"'/')
[ -n "$named" ] && [ -e "$R/$named" ] || fail "vramctl(1) names LD_PRELOAD=$named, not in the package"

X=$R/usr/bin/vramctl
unset VRAMCTL_LIBRARY
[ "$("$X" --version)" = "vramctl $version" ] || fail "vramctl --version: $("$X" --version)"
# The library from the private multiarch directory, found from the binary.
"$X" run --limit 1G -- sh -c 'echo "$LD_PRELOAD"' >out 2>&1
[ "$(cat out)" = "$R/usr/lib/$triplet/vramctl/libvramctl.so" ] ||
	fail "the installed vramctl injects '$(cat out)'"
"$X" demo >demo.out 2>&1 || { tail -n 20 demo.out; fail "the installed vramctl demo failed"; }
grep -q 'vramctl: denied' demo.out || fail "the installed demo shows no denial"
# man finds the pages in the installed tree.
for page in vramctl vramctl-kernel vramctl.conf; do
	MANPATH=$R/usr/share/man MANWIDTH=80 man -P cat "$page" >man.out 2>&1 ||
		fail "man $page: $(head -n 3 man.out)"
done
MANPATH=$R/usr/share/man man -P cat 5 vramctl.conf 2>/dev/null | grep -q 'max_limit' ||
	fail "man 5 vramctl.conf lacks max_limit"
# The installed completion script is the binary's own.
cmp -s "$R/usr/share/bash-completion/completions/vramctl" <("$X" completion bash) ||
	fail "the installed bash completion differs from 'vramctl completion bash'"
bash --norc -c ". '$R/usr/share/bash-completion/completions/vramctl' && complete -p vramctl" \
	>/dev/null 2>&1 || fail "the bash completion does not register"
# As shipped, the config sets nothing, the Slurm snippet enables nothing and
# the machine's preload is not switched on (vramctl preload enable does that).
[ -e "$R/etc/ld.so.preload" ] && fail "the package wrote /etc/ld.so.preload"
grep -v '^[[:space:]]*\(#\|$\)' "$R/etc/vramctl/vramctl.conf" && fail "vramctl.conf sets something"
grep -v '^[[:space:]]*\(#\|$\)' "$R/etc/slurm/plugstack.conf.d/vramctl.conf" &&
	fail "the Slurm snippet is enabled"
grep -q "^#required /usr/lib/$triplet/slurm-wlm/vramctl.so lib=/usr/lib/$triplet/vramctl/libvramctl.so" \
	"$R/etc/slurm/plugstack.conf.d/vramctl.conf" || fail "the Slurm snippet's line: $(cat "$R/etc/slurm/plugstack.conf.d/vramctl.conf")"

# Removal leaves the admin's configuration only; purge removes it.
left() { (cd "$R" && find . -path ./var -prune -o ! -type d -print | sort); }
dp -r vramctl-slurm vramctl >>dpkg.log 2>&1 || fail "dpkg -r failed"
[ "$(left)" = "$(printf './etc/slurm/plugstack.conf.d/vramctl.conf\n./etc/vramctl/vramctl.conf')" ] ||
	fail "after removal: $(left | tr '\n' ' ')"
dp -P vramctl-slurm vramctl >>dpkg.log 2>&1 || fail "dpkg -P failed"
[ -z "$(left)" ] || fail "after purge: $(left | tr '\n' ' ')"
finish
