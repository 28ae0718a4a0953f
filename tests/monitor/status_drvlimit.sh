# status_drvlimit.sh - status and export show who holds each process: a
# program run with `vramctl run --enforce both` on the simulated R615
# driver is held by both the library's cap and the driver's limit of its
# cgroup (read with NVML's unprivileged call): ENFORCER and DRIVER LIMIT in
# the table, "enforcer" and "driver_limit" in JSON (its group's "enforcer"
# too), vramctl_process_driver_*_bytes in Prometheus. Needs a writable
# cgroup v2 hierarchy (the run's own cgroup); skips without.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
fixed_card
export VRAMSIM_DRIVER_RELEASE=615.20.01
. "$VR_SRC/tests/cgroup2.bash"
root=$(cgroup2_root)
cgroup2_root >/dev/null
cg=$CG
[ -n "$root" ] || skip "no writable cgroup v2 hierarchy here (cgroup v1 only, or not root)"
export VRAMCTL_CGROUP_ROOT=$root

# Before: nothing under a driver limit, the columns hidden.
"$V" status >out.table 2>err || fail "status: $(cat err)"
grep -q "ENFORCER" out.table && fail "ENFORCER shown with no driver limit anywhere"

HOLD_PREFIX="$V run --enforce both --limit 1G --" start_holder a -- 100
vpid=${HOLD_BG[a]}
"$V" status >out.table 2>err || fail "status: $(cat err)"
grep -E "^$HPID_a .* both +1 GiB \(164 MiB used, $cg/vramctl-run-$vpid\)" out.table >/dev/null ||
	{ fail "the table: no ENFORCER both and DRIVER LIMIT for the holder:"; cat out.table >&2; }
"$V" status --json >out.json 2>err || fail "status --json: $(cat err)"
cat >check.py <<'PY'
import json, sys
d = json.load(sys.stdin)
p = [p for p in d["processes"] if p["host_pid"] == int(sys.argv[1])][0]
assert p["enforcer"] == "both", p
assert p["driver_limit"] == {"cgroup": sys.argv[2], "hard_bytes": 1 << 30, "soft_bytes": 0,
                             "used_bytes": 164 << 20}, p["driver_limit"]
g = [g for g in d["groups"] if g["name"] == p["group"]][0]
assert g["enforcer"] == "both", g
PY
python3 check.py "$HPID_a" "$cg/vramctl-run-$vpid" <out.json || fail "status --json: not the limit"
"$V" status --format prom >out.prom 2>err || fail "status --format prom: $(cat err)"
grep -q "^vramctl_process_driver_limit_bytes{pid=\"$HPID_a\",.*} 1073741824$" out.prom ||
	fail "prom: no vramctl_process_driver_limit_bytes: $(grep driver out.prom)"
grep -q "^vramctl_process_driver_used_bytes{pid=\"$HPID_a\",.*} 171966464$" out.prom ||
	fail "prom: no vramctl_process_driver_used_bytes"
stop_holder a

# --enforce driver (#35): the driver's limit alone holds it; the library is
# not in it. Its STATE says "driver", not "uncapped", and doctor does not
# tell the user to cap it; what needs the library is refused, not dropped.
HOLD_PREFIX="$V run --enforce driver --limit 1G --" start_holder d -- 100
"$V" status >out.table 2>err || fail "status: $(cat err)"
grep -E "^$HPID_d .* driver +" out.table | grep -q uncapped &&
	fail "--enforce driver: shown uncapped: $(grep "^$HPID_d " out.table)"
grep -E "^$HPID_d +[0-9-]+ +[0-9]+ +driver " out.table >/dev/null ||
	fail "--enforce driver: STATE is not driver: $(grep "^$HPID_d " out.table)"
"$V" status --json | python3 -c 'import json, sys
p = [p for p in json.load(sys.stdin)["processes"] if p["host_pid"] == int(sys.argv[1])][0]
assert p["state"] == "driver" and p["enforcer"] == "driver", p' "$HPID_d" ||
	fail "--enforce driver: status --json"
"$V" doctor >doc.out 2>&1
grep -E "^(WARN|FAIL) +gpu.uncapped" doc.out && fail "doctor tells the user to cap a driver-held process"
stop_holder d
for opt in --spill --group=g --report --trace=t.json --count=allocations; do
	"$V" run --enforce driver --limit 1G "$opt" -- true 2>err
	[ $? = 125 ] && grep -q "needs the injected library, which --enforce driver leaves out" err ||
		fail "--enforce driver $opt: not refused, or not said: $(cat err)"
done
finish
