#!/usr/bin/env bash
# limit_devices.sh - one numbering for `vramctl limit` (#35): a DEV index is
# this shell's numbering, which may not be the members' (a member started
# under CUDA_VISIBLE_DEVICES=1 calls its GPU "0"). An index naming a GPU no
# member of the group uses is refused, said, and nothing changes (it capped
# a GPU the members could not see and exited 0); an index naming one of the
# group's GPUs changes it; a UUID gives the group a new GPU.
export VRAMSIM_DEVICES=16G,16G
. "$VR_SRC/tests/hook/memctl.bash"
python3 - <<'PY' || fail "see above"
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import GiB, V, Prog, check
st = json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True).stdout)
u0, u1 = (d["uuid"] for d in st["devices"])
a = Prog("a", {"VRAMCTL_GROUP": "cvd", "VRAMCTL_LIMIT": "8G", "CUDA_VISIBLE_DEVICES": "1"})
check(a.alloc(100) == "ok", "the member's GPU 0 is the machine's GPU 1")


def caps():
    st = json.loads(subprocess.run([V, "status", "--json"], capture_output=True,
                                   text=True).stdout)
    g = [g for g in st["groups"] if g["name"] == "cvd"][0]
    return {d["uuid"]: d["cap_bytes"] for d in g["devices"]}


r = subprocess.run([V, "limit", "cvd", "0=4G"], capture_output=True, text=True)
check(r.returncode == 125 and "GPU 0 as this shell numbers it is %s, which no member of group cvd uses"
      % u0 in r.stderr and "nothing changed" in r.stderr,
      "an index naming a GPU none of the members uses: refused: %d %s" % (r.returncode, r.stderr))
check(caps() == {u1: 8 * GiB}, "nothing changed: %s" % caps())
r = subprocess.run([V, "limit", "cvd", "1=4G"], capture_output=True, text=True)
check(r.returncode == 0 and caps() == {u1: 4 * GiB}, "the group's GPU by this shell's index: %s %s"
      % (r.stderr, caps()))
r = subprocess.run([V, "limit", "cvd", "%s=2G" % u0], capture_output=True, text=True)
check(r.returncode == 0 and caps().get(u0) == 2 * GiB, "a new GPU by its UUID: %s %s"
      % (r.stderr, caps()))
check(a.end() == 0, "ends normally")
sys.exit(1 if memctl.bad else 0)
PY
finish
