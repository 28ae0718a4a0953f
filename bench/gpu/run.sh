#!/usr/bin/env bash
# bench/gpu/run.sh - vramctl on a real GPU with real frameworks.
#
#   bench/gpu/run.sh [BUILD_DIR]        (default: build/gcc-release)
#
# For PyTorch (default allocator, expandable_segments:True,
# backend:cudaMallocAsync), JAX (default preallocation, and
# XLA_PYTHON_CLIENT_ALLOCATOR=platform) and CuPy, each under a cap of a
# quarter of the device (at least 1 GiB), prints:
#   - the total the framework sees (it must be the cap),
#   - that an allocation past the cap raises the framework's own OOM error
#     and that the program carries on (a small allocation still works),
#   - the time of a fixed workload (matrix products) capped vs uncapped;
# and, for PyTorch (default allocator and expandable_segments), spill: a
# model whose weights are 1.5x the cap completes under `vramctl run --spill`
# with the uncapped result (slowdown and spilled bytes printed), and fails
# with PyTorch's OOM error without --spill.
# First, vramctl doctor on the real driver (a failed check fails the run).
# Frameworks that are not installed are skipped; ONLY=REGEX runs only the
# cases whose name matches. A failed case prints the end of its output. Needs the NVIDIA driver; it
# does nothing without a GPU. Exit status: 0 when every case that ran
# passed, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build/gcc-release}
build=$(cd "$build" && pwd)
lib=$build/libvramctl.so
py=${PYTHON:-python3}

[ -f "$lib" ] || { echo "no $lib: run make first"; exit 1; }
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no NVIDIA GPU here: nothing to run"
	exit 0
fi
total=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0) # MiB
cap_mib=$((total / 4))
[ "$cap_mib" -lt 1024 ] && cap_mib=1024
cap=$((cap_mib * 1024 * 1024))
echo "GPU 0: $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0), ${total} MiB; cap ${cap_mib} MiB"
echo "vramctl library: $lib"

fail=0
# wanted NAME: 0 when ONLY is unset or matches NAME.
wanted() { [ -z "${ONLY:-}" ] || [[ $1 =~ $ONLY ]]; }
# verdict OUTPUT: prints OUTPUT's last line; on anything but PASS, the lines
# before it too (the library's and the framework's own words), and fails.
verdict() {
	local last
	last=$(printf '%s\n' "$1" | tail -n 1)
	printf '%s\n' "$last"
	case $last in
	*PASS*) ;;
	*) printf '%s\n' "$1" | tail -n 12 | head -n 11 | sed 's/^/      | /'; fail=1 ;;
	esac
}
# The machine first: vramctl doctor against the real driver (its self-test
# runs every way into the driver under a 64 MiB cap on GPU 0).
echo "--- vramctl doctor"
"$build/vramctl" doctor || fail=1
echo "---"

# case NAME MODULE SCRIPT [VAR=value...]
case_() {
	local name=$1 module=$2 script=$3
	shift 3
	wanted "$name" || return
	if ! "$py" -c "import $module" >/dev/null 2>&1; then
		printf '%-34s skipped (%s not installed)\n' "$name" "$module"
		return
	fi
	local base capped
	base=$(env "$@" "$py" "$here/$script" --cap 0 2>&1 | tail -n 1)
	capped=$(env "$@" LD_PRELOAD="$lib" VRAMCTL_LIMIT="$cap" VRAMCTL_GROUP="gpubench-$$" \
		"$py" "$here/$script" --cap "$cap" 2>&1)
	printf '%-34s uncapped: %s\n%-34s capped:   ' "$name" "$base" ""
	verdict "$capped"
}

case_ "pytorch default" torch torch_case.py
case_ "pytorch expandable_segments" torch torch_case.py \
	PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
case_ "pytorch cudaMallocAsync" torch torch_case.py \
	PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
case_ "jax default (preallocate)" jax jax_case.py
case_ "jax allocator=platform" jax jax_case.py XLA_PYTHON_CLIENT_ALLOCATOR=platform
case_ "cupy" cupy cupy_case.py

# Spill (docs/spill.md): past the cap, host memory the GPU reads in place.
# A cap of at most 4 GiB here, so the 1.5x model (and the host memory it
# pins) stays small on large GPUs.
vramctl=$build/vramctl
scap=$cap
[ "$scap" -gt $((4 << 30)) ] && scap=$((4 << 30))
spill_case() { # NAME [VAR=value...]
	local name=$1 ref
	shift
	wanted "$name" || return
	if ! "$py" -c "import torch" >/dev/null 2>&1; then
		printf '%-34s skipped (torch not installed)\n' "$name"
		return
	fi
	ref=$(mktemp)
	printf '%-34s %s\n' "$name" "$(env "$@" "$py" "$here/torch_spill.py" --size "$scap" --ref "$ref" 2>&1 | tail -n 1)"
	local out
	out=$(env "$@" VRAMCTL="$vramctl" "$vramctl" run --limit "$scap" --spill=$((scap * 2)) -- \
		"$py" "$here/torch_spill.py" --cap "$scap" --ref "$ref" 2>&1)
	printf '%-34s ' ""
	verdict "$out"
	out=$(env "$@" "$vramctl" run --limit "$scap" -- \
		"$py" "$here/torch_spill.py" --cap "$scap" --expect oom 2>&1)
	printf '%-34s without --spill: ' ""
	verdict "$out"
	rm -f "$ref"
}
spill_case "pytorch spill (default)"
spill_case "pytorch spill (expandable_segments)" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
exit $fail
