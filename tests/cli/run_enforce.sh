# run_enforce.sh - `vramctl run --enforce library|driver|both` on the
# simulated GPU: bad values and missing --limit refused; the driver's limit
# refused, with one line and nothing left behind, where it cannot be had
# (cgroup v1, a driver before R615, not root); and where this machine has a
# writable cgroup v2 hierarchy, the command runs in its own cgroup under the
# driver's limit (set while it runs, cleared and removed after), the
# simulated driver refusing past it, with the library's cap on top (both).
. "$VR_SRC/tests/cli/common.bash"
. "$VR_SRC/tests/monitor/lib.bash"
NL=$VR_BUILD/tests/cli/nvmllimit
run() {
	"$V" run "$@" >out 2>err
	rc=$?
}

run --enforce sometimes --limit 1G -- true
expect_rc 125 "$rc" "bad --enforce"
expect_grep "--enforce sometimes: expected library, driver or both" err "bad --enforce: message"
run --enforce driver -- true
expect_rc 125 "$rc" "--enforce driver without --limit"
expect_grep "--enforce driver needs --limit" err "no --limit: message"
run --enforce library --limit 1G -- true
expect_rc 0 "$rc" "--enforce library"

sim_only || { echo "the rest needs the simulator's controls"; finish; }
require_sim
unset VRAMSIM_MIG VRAMSIM_EUID VRAMSIM_CGROUP
export VRAMSIM_DRIVER_RELEASE=615.20.01 VRAMSIM_CONTEXT_BYTES=$((64 << 20))

# cgroup v1 (a root without cgroup.controllers): refused, one line.
mkdir v1
VRAMCTL_CGROUP_ROOT=$PWD/v1 run --enforce driver --limit 256M -- true
expect_rc 125 "$rc" "cgroup v1"
expect_grep "is not a cgroup v2 hierarchy" err "cgroup v1: message"
[ "$(wc -l <err)" = 1 ] || fail "cgroup v1: more than one line: $(cat err)"

# The library under a driver limit set by someone else (here: on this
# test's own cgroup, in the simulated card's books): the program sees the
# smaller of the two caps, and the driver's refusal is explained.
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
if [ -n "$own" ]; then
	ns=/sys/fs/cgroup${own%/}
	"$NL" set "$ns" 0 $((256 << 20)) || fail "nvmllimit set $ns"
	VRAMCTL_COUNT=allocations run --limit 1G -- "$HOLDER" -t 100 100 100
	expect_grep "total 268435456" out "cap 1G, driver 256M: the driver's is the smaller"
	expect_grep "ready 1 " out "cap 1G, driver 256M: refused past the driver's"
	expect_grep "denied 100 MiB on GPU 0 by the driver: its memory limit of cgroup ${own}, 256 MiB" err \
		"the driver's refusal explained"
	run --limit 128M -- "$HOLDER" -t
	expect_grep "total 134217728" out "cap 128M, driver 256M: the cap is the smaller"
	"$NL" set "$ns" 0 max || fail "nvmllimit clear $ns"
	run --limit 1G -- "$HOLDER" -t 100 100 100
	grep -q "by the driver" err && fail "a driver line with no driver limit: $(cat err)"
else
	echo "note: no cgroup v2 line in /proc/self/cgroup: the library under a driver limit not checked"
fi

# A writable cgroup v2 hierarchy of this machine, for the rest.
. "$VR_SRC/tests/cgroup2.bash"
root=$(cgroup2_root)
[ -n "$root" ] || skip "no writable cgroup v2 hierarchy here (not root, or cgroup v1 only): --enforce driver refusals checked above"
export VRAMCTL_CGROUP_ROOT=$root
cgroup2_root >/dev/null
cg=$CG
# What this test's runs left behind: a run's cgroup that was not there
# before and has no process in it (another suite running beside this one on
# the same machine may have a run of its own going).
before=$(ls -d "$root$cg"/vramctl-run-* 2>/dev/null)
left() {
	local d
	for d in "$root$cg"/vramctl-run-*; do
		[ -d "$d" ] || continue
		grep -qxF "$d" <<<"$before" && continue
		[ -s "$d/cgroup.procs" ] || echo "$d"
	done
}

# Not root for NVML: the driver refuses to set it; nothing is left behind.
VRAMSIM_EUID=1000 run --enforce driver --limit 256M -- true
expect_rc 125 "$rc" "not root"
expect_grep "setting it needs root" err "not root: message"
[ -z "$(left)" ] || fail "not root: cgroup left behind: $(left)"
# A driver before R615.
VRAMSIM_DRIVER_RELEASE=580.82.07 run --enforce driver --limit 256M -- true
expect_rc 125 "$rc" "old driver"
expect_grep "needs a driver of R615 or later" err "old driver: message"
[ -z "$(left)" ] || fail "old driver: cgroup left behind: $(left)"

# The driver alone: the program is told the limit, and refused past it by
# the driver (its 64 MiB context counts) with no line from vramctl.
run --enforce driver --limit 256M -- "$HOLDER" -t 100 100 100
expect_rc 0 "$rc" "driver"
expect_grep "total 268435456" out "driver: cuMemGetInfo's total is the driver's limit"
expect_grep "ready 1 " out "driver: the second 100 MiB refused (64 + 100 + 100 > 256)"
[ -z "$(left)" ] || fail "driver: cgroup left behind: $(left)"
grep -q "denied" err && fail "driver only: the library said something: $(cat err)"

# While it runs: the limit is on the command's cgroup; after, cleared.
# The soft limit is the guarantee.
HOLD_PREFIX="$V run --enforce driver --limit 256M --guarantee 64M --" start_holder a -- 100
vpid=${HOLD_BG[a]}
ns=/sys/fs/cgroup$cg/vramctl-run-$vpid
"$NL" get "$ns" >lim || fail "get $ns"
expect_grep "soft 67108864 hard 268435456 used 171966464" lim "the limits while it runs (64 + 100 MiB used)"
[ -d "$root$cg/vramctl-run-$vpid" ] || fail "no cgroup $root$cg/vramctl-run-$vpid"
stop_holder a
"$NL" get "$ns" >lim
expect_grep "soft 0 hard 18446744073709551615" lim "cleared after the run"
[ -z "$(left)" ] || fail "cgroup left behind: $(left)"

# Both: the library's cap (1G: the books allow 200 MiB) and the driver's
# (256M): the driver's refusal is explained like one of vramctl's.
VRAMCTL_COUNT=allocations run --enforce both --limit 256M -- "$HOLDER" -t 100 100 100
expect_rc 0 "$rc" "both"
expect_grep "total 268435456" out "both: the smaller cap"
expect_grep "ready 1 " out "both: refused past the driver's limit"
expect_grep "by the driver: its memory limit of cgroup $cg/vramctl-run-" err "both: the denial names the driver's limit"
finish
