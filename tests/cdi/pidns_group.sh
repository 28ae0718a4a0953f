#!/usr/bin/env bash
# tests/cdi/pidns_group.sh - a cap without a group, in a container's own PID
# namespace: the container is one group, named after its namespace
# (pidns-<inode>), so containers sharing the host's books never collide
# although each has a PID 1 (a group named after the PID, pid-1, would), and
# the processes of one container share its cap. Containers here are PID
# namespaces made with unshare(1), so the test also runs in sanitizer builds
# (tests/cdi/podman.sh does the same in a real container runtime).
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
command -v python3 >/dev/null || skip "needs python3 (reads vramctl status --json)"
unshare -p -f --kill-child true 2>/dev/null || skip "cannot make a PID namespace here (unshare -p)"

# Two "containers", each one holder that is PID 1 there, the same 1 GiB cap.
HOLD_PREFIX="unshare -p -f --kill-child" start_holder a VRAMCTL_LIMIT=1G LD_PRELOAD="$LIB" -- 600
HOLD_PREFIX="unshare -p -f --kill-child" start_holder b VRAMCTL_LIMIT=1G LD_PRELOAD="$LIB" -- 600
[ "$HPID_a" = 1 ] && [ "$HPID_b" = 1 ] || fail "the holders are not PID 1 ($HPID_a, $HPID_b)"
# A second process in a's namespace: same group, so its 600 MiB does not fit.
# (HOLD_BG[a] is unshare; its one child is the holder, PID 1 inside.)
inner=$(pgrep -P "${HOLD_BG[a]}" | head -n 1)
HOLD_PREFIX="nsenter -t $inner -p --" start_holder c VRAMCTL_LIMIT=1G LD_PRELOAD="$LIB" -- 600
[ "$HPID_c" != 1 ] || fail "the second process of a's namespace is PID 1"

"$V" status --json >"$TMPDIR/status.json"
python3 - "$TMPDIR/status.json" <<'PY' || fail "groups (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["capped"]]
groups = {}
for p in rows:
    groups.setdefault(p["group"], []).append(p)
ok = len(rows) == 3 and len(groups) == 2 and all(g.startswith("pidns-") for g in groups)
# One group holds a (600 MiB) and c (denied, 0); the other holds b (600 MiB).
uses = sorted(sorted(p["in_use_bytes"] for p in g) for g in groups.values())
ok = ok and uses == [[0, 600 << 20], [600 << 20]]
ok = ok and all(p["cap_bytes"] == 1 << 30 for p in rows)
if not ok:
    print(json.dumps(rows, indent=1))
sys.exit(0 if ok else 1)
PY
ls "$VRAMCTL_REGISTRY_DIR" | grep -q '^pid-1\.vrg$' && fail "a pid-1 group was made"
stop_holder c
stop_holder b
stop_holder a
finish
