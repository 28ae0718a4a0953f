#!/usr/bin/env bash
# bench/preload_bench.sh BUILD - the machine's preload's cost to a program
# that never calls the driver (bench/preload_bench.c): once through
# LD_PRELOAD, and, as root, once through /etc/ld.so.preload itself in a
# private mount namespace (a copy of /etc: the machine's file is never
# touched). A benchmark: it prints figures and asserts nothing.
set -eu
B=${1:?usage: bench/preload_bench.sh BUILD}
B=$(cd "$B" && pwd)
"$B/bench/preload_bench" "$B/libvramctl.so" "$B/bench/empty_preload.so" /bin/true
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	unshare -m --propagation private bash -c '
		set -eu
		etc=$(mktemp -d)
		trap "rm -rf $etc" EXIT
		cp -a /etc/. "$etc/"
		mount --bind "$etc" /etc
		"$1/bench/preload_bench" --file "$1/libvramctl.so" "$1/bench/empty_preload.so" /bin/true
	' bash "$B"
else
	echo "(not root: /etc/ld.so.preload itself not measured)"
fi
