#!/usr/bin/env bash
# card_bench.sh - runs bench/card_bench directly and under the library
# (the cap counting the card, and --count allocations), each figure the
# best (lowest) of 5 runs, on the simulator (docs/figures.md rows 1d-1f).
#
#   bench/card_bench.sh BUILD_DIR [LIBRARY]
#
# LIBRARY (default BUILD_DIR/libvramctl.so) lets another build's library
# (the previous release's) be measured with the same program and driver.
set -u
build=$(cd "$1" && pwd)
lib=${2:-$build/libvramctl.so}
prog=$build/bench/card_bench
export LD_LIBRARY_PATH=$build/sim VRAMSIM_STATE_DIR=$(mktemp -d)
export VRAMCTL_REGISTRY_DIR=$(mktemp -d) VRAMCTL_DEVICE_DIR=$(mktemp -d)
chmod 700 "$VRAMCTL_REGISTRY_DIR"

best() { # ENV... -- ARGS...: the lowest figure of 5 runs
	local envs=() b=
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	for _ in 1 2 3 4 5; do
		local v
		v=$(env "${envs[@]}" "$prog" "$@" 2>/dev/null | awk '{ print $2 }')
		[ -n "$v" ] && { [ -z "$b" ] || awk -v a="$v" -v b="$b" 'BEGIN { exit !(a < b) }'; } && b=$v
	done
	echo "${b:-?}"
}

cap=(LD_PRELOAD="$lib" VRAMCTL_LIMIT=1G)
echo "refused request, ns each (10,000 in a row):"
echo "  direct (the driver's own refusal)  $(best -- refusals 10000)"
echo "  capped, --count allocations         $(best "${cap[@]}" VRAMCTL_COUNT=allocations -- refusals 10000)"
echo "  capped, the card counted            $(best "${cap[@]}" VRAMCTL_COUNT=card -- refusals 10000)"
echo "cuCtxCreate_v2 + cuCtxDestroy_v2, us each (5 pairs):"
for ctx in 0 64M; do
	echo "  contexts of $ctx: direct $(best VRAMSIM_CONTEXT_BYTES=$ctx -- contexts 5)," \
		"card counted $(best "${cap[@]}" VRAMCTL_COUNT=card VRAMSIM_CONTEXT_BYTES=$ctx -- contexts 5)"
done
echo "proportional set size once a 64 MiB block is held, kB:"
echo "  direct                              $(best -- pss)"
echo "  capped, --count allocations         $(best "${cap[@]}" VRAMCTL_COUNT=allocations -- pss)"
echo "  capped, the card counted            $(best "${cap[@]}" VRAMCTL_COUNT=card -- pss)"
