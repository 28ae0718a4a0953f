#!/usr/bin/env bash
# status_guarantee - guarantees on the card (#26) as `vramctl status` and
# `vramctl export` show them, from real device books on a simulated 16 GiB
# card whose contexts take nothing (so every figure is exact): ga (guarantee
# 4 GiB) holds 6 GiB, borrowing 2; gb (guarantee 6 GiB) holds 1 GiB; gx
# (guarantee 2 GiB), a group of another registry (as another user's would
# be), holds 64 MiB. 7 GiB + 64 MiB used; 5 GiB of gb's guarantee and 2 GiB
# less 64 MiB of gx's unused: 2 GiB unguaranteed free.
# Without NVML, a GPU only its book names is listed. A book status does not
# use (writable by users other than root) is a note, its figures unknown.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
MEMCTL=$VR_BUILD/tests/hook/memctl
[ -x "$MEMCTL" ] || skip "$MEMCTL is not built"
mkdir -p "$TMPDIR/other" && chmod 700 "$TMPDIR/other"
export VRAMSIM_DEVICES=16G VRAMSIM_CONTEXT_BYTES=0 MEMCTL V LIB OTHER=$TMPDIR/other
python3 - <<'PY' || fail "see above"
import json, os, re, subprocess, sys, urllib.request
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import Prog, check

GiB, MiB = 1 << 30, 1 << 20

def member(name, group, limit, guarantee, **env):
    e = {"VRAMCTL_GROUP": group, "VRAMCTL_LIMIT": limit, "VRAMCTL_GUARANTEE": guarantee}
    e.update(env)
    return Prog(name, e, os.environ["TMPDIR"])


a = member("a", "ga", "12G", "4G")
b = member("b", "gb", "8G", "6G")
x = member("x", "gx", "4G", "2G", VRAMCTL_REGISTRY_DIR=os.environ["OTHER"])
check(x.alloc(64) == "ok", "gx takes 64 MiB of its guarantee: %s" % x.stderr())
check(a.alloc(6 * 1024) == "ok", "ga borrows 2 GiB past its guarantee: %s" % a.stderr())
check(b.alloc(1024) == "ok", "gb takes 1 GiB of its guarantee: %s" % b.stderr())

V = os.environ["V"]
j = json.loads(subprocess.run([V, "status", "--json"], check=True, capture_output=True,
                              text=True).stdout)
dev = j["devices"][0]
check(dev["guaranteed_bytes"] == 12 * GiB, "guaranteed: %s" % dev["guaranteed_bytes"])
check(dev["unused_guarantee_bytes"] == 7 * GiB - 64 * MiB, "unused: %s" % dev["unused_guarantee_bytes"])
check(dev["free_bytes"] == 9 * GiB - 64 * MiB, "free: %s" % dev["free_bytes"])
check(dev["unguaranteed_free_bytes"] == 2 * GiB,
      "unguaranteed free: %s" % dev["unguaranteed_free_bytes"])
held = {e["group"]: e for e in dev["guarantees"]}
check(sorted(held) == ["ga", "gb", "gx"], "holders: %s" % sorted(held))
want = {"ga": (4, 6 * GiB, True, a.pid), "gb": (6, 1 * GiB, True, b.pid),
        "gx": (2, 64 * MiB, False, x.pid)}
for g, (gu, h, reg, pid) in want.items():
    e = held.get(g, {})
    check(e.get("guarantee_bytes") == gu * GiB and e.get("held_bytes") == h and
          e.get("in_registry") == reg and e.get("uid") == os.getuid() and e.get("pid") == pid,
          "holder %s: %s" % (g, e))
groups = {g["name"]: g["devices"][0] for g in j["groups"]}
check(sorted(groups) == ["ga", "gb"], "groups of this registry: %s" % sorted(groups))
for g, (gu, bo) in {"ga": (4, 2), "gb": (6, 0)}.items():
    d = groups.get(g, {})
    check(d.get("guarantee_bytes") == gu * GiB and d.get("borrowed_bytes") == bo * GiB,
          "group %s: guarantee %s borrowed %s" % (g, d.get("guarantee_bytes"),
                                                  d.get("borrowed_bytes")))

t = subprocess.run([V, "status"], check=True, capture_output=True, text=True).stdout
check(re.search(r"^ga +0 +12 GiB +4 GiB +2 GiB ", t, re.M), "table: ga's row:\n" + t)
check("GPU 0: guarantees 12 GiB (6.9 GiB unused); unguaranteed free 2 GiB; held by: " in t,
      "table: the device's line:\n" + t)
check("gx (uid %d, not in this registry) 2 GiB, 64 MiB in use" % os.getuid() in t,
      "table: the other registry's group:\n" + t)

# export: the series, scraped over HTTP.
xp = subprocess.Popen([V, "export", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                      text=True)
url = xp.stdout.readline().strip().split()[-1]
try:
    prom = urllib.request.urlopen(url, timeout=20).read().decode()
finally:
    xp.terminate()
    xp.wait(timeout=20)
u = dev["uuid"]
for s in ('vramctl_group_guarantee_bytes{group="ga",gpu="0",uuid="%s"} %d' % (u, 4 * GiB),
          'vramctl_group_borrowed_bytes{group="ga",gpu="0",uuid="%s"} %d' % (u, 2 * GiB),
          'vramctl_group_borrowed_bytes{group="gb",gpu="0",uuid="%s"} 0' % u,
          'vramctl_device_guaranteed_bytes{gpu="0",uuid="%s"} %d' % (u, 12 * GiB),
          'vramctl_device_unused_guarantee_bytes{gpu="0",uuid="%s"} %d' % (u, 7 * GiB - 64 * MiB),
          'vramctl_device_unguaranteed_free_bytes{gpu="0",uuid="%s"} %d' % (u, 2 * GiB),
          'vramctl_device_guarantee_bytes{gpu="0",uuid="%s",group="gx",uid="%d"} %d'
          % (u, os.getuid(), 2 * GiB)):
    check(s + "\n" in prom, "export lacks: " + s)

# Without NVML and with no group on the GPU in the registry read, its book
# still lists it, without an index, with every guarantee on it.
empty = os.path.join(os.environ["TMPDIR"], "empty")
os.mkdir(empty, 0o700)
r = subprocess.run([V, "status", "--json", "--registry", empty], capture_output=True, text=True,
                   env=dict(os.environ, VRAMCTL_NVML="/nonexistent/libnvidia-ml.so.1"))
devs = json.loads(r.stdout or "{}").get("devices", [])
check(r.returncode == 0 and len(devs) == 1 and devs[0]["uuid"] == u and
      devs[0]["index"] is None and devs[0]["guaranteed_bytes"] == 12 * GiB and
      sorted(e["group"] for e in devs[0]["guarantees"]) == ["ga", "gb", "gx"] and
      devs[0]["unguaranteed_free_bytes"] is None,
      "a GPU only its book names: %d %s" % (r.returncode, devs))

# A book that is not used (writable by users other than root: what it says
# is no guarantee): a note, the GPU's guarantee figures unknown, status
# still succeeds.
books = os.environ["VRAMCTL_DEVICE_DIR"]
door = [os.path.join(books, n) for n in os.listdir(books) if n.startswith("vramctl-dev-") and
        not n.endswith(".lock")]
check(len(door) == 1, "one device book: %s" % door)
os.chmod(door[0], 0o666)
r = subprocess.run([V, "status", "--json"], capture_output=True, text=True)
os.chmod(door[0], 0o644)
check(r.returncode == 0, "status with a book it cannot read: %d %s" % (r.returncode, r.stderr))
j = json.loads(r.stdout or "{}")
dev = (j.get("devices") or [{}])[0]
check(dev.get("guaranteed_bytes", 0) is None and dev.get("guarantees", 0) is None,
      "a book not read: figures unknown: %s" % dev)
check(any("device book of %s unreadable" % u in n for n in j.get("notes", [])),
      "a book not read: the note: %s" % j.get("notes"))
check(all(g["devices"][0]["guarantee_bytes"] is None for g in j.get("groups", [])),
      "a book not read: the groups' guarantees unknown")

for p in (a, b, x):
    check(p.end() == 0, "%s ends normally" % p.name)
sys.exit(1 if memctl.bad else 0)
PY
# The guarantees' semaphores outlive the test's files: root ends them.
[ "$(id -u)" = 0 ] && "$V" guard --reclaim
finish
