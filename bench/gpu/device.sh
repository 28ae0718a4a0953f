#!/usr/bin/env bash
# bench/gpu/device.sh - every real-GPU check in one go, for a machine with an
# NVIDIA driver and a build made elsewhere:
#
#   bench/gpu/device.sh [BUILD_DIR [LOG_DIR]]   (default: build/gcc-release, .)
#
# 1. bench/gpu/run.sh: doctor, then PyTorch, JAX and CuPy capped, spill;
#    bench/gpu/card.sh: the same frameworks' figure on the card (nvidia-smi)
#    under --limit 4G, their overhead, two processes of one group (#24);
#    bench/gpu/elastic.py: guarantees between two PyTorch programs, and
#    `vramctl limit` on a running one (#26);
#    bench/gpu/park.py: a PyTorch program parked and brought back with its
#    tensors' checksum equal, the card's figure per nvidia-smi before,
#    during and after; one parked by itself when idle; a waiter woken when
#    a neighbour frees (#36);
#    bench/gpu/jobs.sh: a PyTorch child with LD_PRELOAD removed inside a
#    4 GiB job, with and without the machine's preload (#34);
# 2. bench/gpu/driver_facts: what the driver does where the simulator has to
#    choose (docs/real-gpu.md);
# 3. bench/alloc_bench against the real driver (ratios, never asserted;
#    ALLOC_BENCH_PAIRS pairs per thread, 2000 unless set);
# 4. the test suite of BUILD_DIR against the real driver (tests/run --driver
#    system): tests that need the simulator's controls skip themselves.
# Each part has its own time limit (PART_SECONDS_*), so one that hangs does
# not hide the others; ONLY=REGEX is passed to run.sh. Logs go to LOG_DIR:
# frameworks.log, driver_facts.log, alloc_bench.log, suite.log, and the
# kept logs of failed tests as failed-tests.tar.gz. docs/real-gpu.md has
# what it found on an H200.
# Exit status: 0 when every part passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$src/build/gcc-release}" && pwd)
logs=$(mkdir -p "${2:-.}" && cd "${2:-.}" && pwd)
t_frameworks=${PART_SECONDS_FRAMEWORKS:-240}
t_alloc=${PART_SECONDS_ALLOC:-40}
t_suite=${PART_SECONDS_SUITE:-170}

part() { # NAME LOG SECONDS COMMAND...
	local name=$1 log=$2 secs=$3 rc start=$SECONDS
	shift 3
	echo "=== $name (at most ${secs}s)"
	PYTHONUNBUFFERED=1 timeout -k 5 "$secs" "$@" >"$log" 2>&1
	rc=$?
	tail -n 60 "$log"
	echo "=== $name: exit $rc after $((SECONDS - start))s"
	[ $rc -eq 0 ]
}

echo "=== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
uname -r
ok=0
part frameworks "$logs/frameworks.log" "$t_frameworks" "$here/run.sh" "$build" || ok=1
part card "$logs/card.log" "${PART_SECONDS_CARD:-180}" "$here/card.sh" "$build" || ok=1
part elastic "$logs/elastic.log" "${PART_SECONDS_ELASTIC:-120}" python3 "$here/elastic.py" "$build" || ok=1
part park "$logs/park.log" "${PART_SECONDS_PARK:-180}" python3 "$here/park.py" "$build" || ok=1
part jobs "$logs/jobs.log" "${PART_SECONDS_JOBS:-120}" "$here/jobs.sh" "$build" || ok=1
part driver_facts "$logs/driver_facts.log" 60 "$build/bench/driver_facts" || ok=1
part alloc_bench "$logs/alloc_bench.log" "$t_alloc" \
	env ALLOC_BENCH_PAIRS="${ALLOC_BENCH_PAIRS:-2000}" "$build/bench/alloc_bench" || ok=1

# The suite: the list is the build's own (make list-tests, made where the
# build was, so its paths are rewritten to this checkout).
list=$build/tests.list
if [ ! -f "$list" ]; then
	make -s -C "$src" list-tests >"$list" || { echo "no test list"; exit 1; }
fi
mapfile -t tests < <(sed "s|^.*/$(basename "$build")/|$build/|; s|^.*/tests/\(.*\.sh\)$|tests/\1|" "$list")
export TMPDIR=${TMPDIR:-/tmp}
part suite "$logs/suite.log" "$t_suite" \
	env VR_TEST_TIMEOUT=40 "$src/tests/run" --build "$build" --driver system "${tests[@]}" || ok=1
kept=$(sed -n 's/^logs kept in //p' "$logs/suite.log")
[ -n "$kept" ] && [ -d "$kept" ] && tar -czf "$logs/failed-tests.tar.gz" -C "$kept" .
exit $ok
