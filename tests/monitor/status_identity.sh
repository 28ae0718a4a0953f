# status_identity.sh - who each member is comes from the record it wrote at
# its join (#37), not from /proc/PID/cgroup and environ at every look: with
# 24 members, `status --json` opens neither file of any member (main opened
# both for each, twice the cgroup), yet shows the names each member's
# environment gave it. The cgroups are the kernel's word all the same: a
# member moved into another cgroup after its join (a docker-shaped scope of
# the cgroup v2 hierarchy, made by this test) is shown in its container, as
# /proc says, not where its record says it was.
. "$VR_SRC/tests/monitor/lib.bash"
MEMBER=$VR_BUILD/tests/monitor/books_member
[ -x "$MEMBER" ] || skip "$MEMBER is not built"
command -v strace >/dev/null || skip "no strace"
U=GPU-0e0e0e0e-1111-2222-3333-444444444444
ID=9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d

HOLDER=$MEMBER
for i in $(seq 1 24); do
	start_holder "m$i" VRAMCTL_POD_NAME="train-$i" VRAMCTL_POD_NAMESPACE=ml \
		VRAMCTL_CONTAINER_NAME=trainer -- \
		"$VRAMCTL_REGISTRY_DIR" job "$U" $((1 << 30)) $(((i + 1) << 20)) 0 card || finish
done

# (LeakSanitizer cannot run under ptrace: it is off for this one command.)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -e trace=openat -o trace "$V" status --json >out 2>err ||
	fail "status --json failed: $(cat err)"
pids=()
for i in $(seq 1 24); do
	v=HPID_m$i
	pids+=("${!v}")
done
opened=0
for p in "${pids[@]}"; do
	grep -qE "\"/proc/$p/(cgroup|environ)\"" trace && opened=$((opened + 1))
done
[ "$opened" = 0 ] ||
	fail "status --json opened /proc/PID/cgroup or environ of $opened of 24 members: $(grep -cE '/proc/[0-9]+/(cgroup|environ)' trace) opens"
python3 - out "${pids[@]}" <<'PY' || fail "status --json: the members' identities (above)"
import json, sys
d = json.load(open(sys.argv[1]))
want = {int(p): "train-%d" % (i + 1) for i, p in enumerate(sys.argv[2:])}
rows = {p["host_pid"]: p for p in d["processes"] if p.get("host_pid") in want}
bad = [(pid, rows.get(pid)) for pid, name in want.items()
       if not rows.get(pid) or rows[pid].get("pod_name") != name or
       rows[pid].get("pod_namespace") != "ml" or rows[pid].get("container_name") != "trainer"]
if bad:
    print("wrong identities:", bad[:3], file=sys.stderr)
    sys.exit(1)
PY

# The kernel's word wins over the record: a member moved into a cgroup
# shaped as docker's, after its join.
. "$VR_SRC/tests/cgroup2.bash"
R=$(cgroup2_root)
CG=$(sed -n 's/^0:://p' /proc/self/cgroup)
CG=${CG%/}
if [ -z "$R" ] || [ "$(id -u)" != 0 ]; then
	echo "note: no cgroup v2 hierarchy this test may write to: the move is not checked"
	finish
fi
mkdir -p "$R/system.slice/docker-$ID.scope" || fail "cannot make a cgroup"
trap 'echo "$HPID_m1" >"$R$CG/cgroup.procs" 2>/dev/null; rmdir "$R/system.slice/docker-$ID.scope" "$R/system.slice" 2>/dev/null' EXIT
echo "$HPID_m1" >"$R/system.slice/docker-$ID.scope/cgroup.procs" || fail "cannot move a member"
"$V" status --json >out 2>err || fail "status --json failed: $(cat err)"
python3 - out "$HPID_m1" "$HPID_m2" "$ID" <<'PY' || fail "status --json after the move (above)"
import json, sys
d = json.load(open(sys.argv[1]))
moved, other, cid = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = {p["host_pid"]: p for p in d["processes"]}
if rows[moved].get("container_id") != cid:
    print("the moved member: %s" % rows[moved], file=sys.stderr)
    sys.exit(1)
if rows[other].get("container_id") is not None:
    print("a member that did not move: %s" % rows[other], file=sys.stderr)
    sys.exit(1)
PY
finish
