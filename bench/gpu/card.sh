#!/usr/bin/env bash
# bench/gpu/card.sh - the cap holds on the card (#24), as nvidia-smi counts
# it: PyTorch, JAX (preallocating, and XLA_PYTHON_CLIENT_ALLOCATOR=platform)
# and CuPy under `vramctl run --limit 4G`, each taking 90% of what it is
# told is free. Prints, per framework, what it allocated, what NVML's
# process list (nvidia-smi --query-compute-apps) says the card holds for it,
# and the difference (its context and the driver's use): the card's figure
# must not pass 4 GiB (one 2 MiB page aside). Then two PyTorch processes in
# one group: together no more than the cap.
#
#   bench/gpu/card.sh [BUILD_DIR]     (default: build/gcc-release)
#
# Exit status: 0 when every case that ran held; frameworks not installed are
# skipped. Needs an NVIDIA GPU; does nothing without one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build/gcc-release}" && pwd)
py=${PYTHON:-python3}
cap_mib=4096
page_mib=2
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no NVIDIA GPU here: nothing to run"
	exit 0
fi
fail=0

# The card's figure for PID $1 in MiB (nvidia-smi's process list), or 0.
on_card() {
	nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
		awk -F', *' -v p="$1" '$1 == p { print $2; found = 1 } END { if (!found) print 0 }'
}

# hold NAME VAR=value... -- FRAMEWORK: starts a capped holder in $group;
# sets PID_NAME, ALLOC_NAME (bytes) and IN_NAME (the fd of its stdin).
hold() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	local in=$TMPDIR/card-$$-$name.in out=$TMPDIR/card-$$-$name.out w r line=""
	rm -f "$in" "$out"
	mkfifo "$in" "$out"
	env "${envs[@]}" "$build/vramctl" run --limit "${cap_mib}M" --group "$group" --exec -- \
		"$py" "$here/card_case.py" "$@" <"$in" >"$out" 2>"$TMPDIR/card-$$-$name.err" &
	printf -v "PID_$name" '%s' "$!"
	exec {w}>"$in"
	exec {r}<"$out"
	printf -v "IN_$name" '%s' "$w"
	read -r -t 120 -u "$r" line
	exec {r}<&-
	rm -f "$in" "$out"
	printf -v "ALLOC_$name" '%s' "${line#ready }"
	[ "${line%% *}" = ready ] && return 0
	echo "$name: did not start: $line"
	tail -n 5 "$TMPDIR/card-$$-$name.err"
	return 1
}

case_() { # NAME MODULE VAR=value... -- FRAMEWORK
	local name=$1 module=$2
	shift 2
	if ! "$py" -c "import $module" >/dev/null 2>&1; then
		printf '%-28s skipped (%s not installed)\n' "$name" "$module"
		return
	fi
	group=card-$$-$RANDOM
	if ! hold one "$@"; then fail=1; return; fi
	sleep 1
	local card alloc
	card=$(on_card "$PID_one")
	alloc=$((ALLOC_one / 1048576))
	local fd=$IN_one
	exec {fd}>&-
	wait "$PID_one" 2>/dev/null
	local verdict=PASS
	[ "$card" -le $((cap_mib + page_mib)) ] || { verdict=FAIL; fail=1; }
	printf '%-28s allocated %6s MiB  on the card %6s MiB  overhead %5s MiB  %s\n' \
		"$name" "$alloc" "$card" "$((card - alloc))" "$verdict"
}

TMPDIR=${TMPDIR:-/tmp}
echo "cap ${cap_mib} MiB; nvidia-smi's process list is the card's figure"
case_ "pytorch" torch -- torch
case_ "jax (preallocate)" jax -- jax
case_ "jax (platform allocator)" jax XLA_PYTHON_CLIENT_ALLOCATOR=platform -- jax
case_ "cupy" cupy -- cupy

# Two processes of one group: together no more than the cap.
if "$py" -c "import torch" >/dev/null 2>&1; then
	group=card2-$$
	hold a -- torch || fail=1
	hold b -- torch
	b_ok=$?
	sleep 1
	ca=$(on_card "${PID_a:-0}") cb=$(on_card "${PID_b:-0}")
	verdict=PASS
	[ $((ca + cb)) -le $((cap_mib + 2 * page_mib)) ] || { verdict=FAIL; fail=1; }
	printf '%-28s %s + %s MiB on the card (the second %s)  %s\n' "two pytorch, one group" \
		"$ca" "$cb" "$([ $b_ok = 0 ] && echo started || echo was refused its context)" "$verdict"
	for fd in ${IN_a:-} ${IN_b:-}; do exec {fd}>&-; done
	wait 2>/dev/null
fi
exit $fail
