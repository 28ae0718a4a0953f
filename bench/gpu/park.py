"""bench/gpu/park.py - waiting and parking (#36) on a real GPU with PyTorch:

 1. A (--park-idle=manual) fills 8 GiB of random tensors and sums them;
    `vramctl park A`: nvidia-smi's figure for the card drops by about
    8 GiB and no longer lists A; `vramctl status` shows it parked; A's next
    sum (its first driver call since) brings it back: the same checksum,
    and the card's figure is back;
 2. B (--park-idle=3s) fills 2 GiB, stays idle: parked by itself within
    a few seconds; its next sum is the same;
 3. a waiter woken when a neighbour frees: X holds 3 GiB of a 4 GiB group,
    Y asks 2 GiB with --wait=30: no answer while X holds them; X frees
    (PyTorch's cache emptied); Y is granted after the free (the order of
    the two processes' clocks), and how long after is printed (a figure,
    not asserted beyond 5 s).

  python3 bench/gpu/park.py BUILD_DIR      (exit 0 when every check held)

Needs a driver with the checkpoint API (CUDA 12.8+: `vramctl doctor`'s
driver.checkpoint), PyTorch and 16 GiB free on GPU 0; skips otherwise.
"""
import json
import os
import subprocess
import sys
import time

import driven
from driven import check

GiB = 1 << 30
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/gcc-release")
V = os.path.join(build, "vramctl")
case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "park_case.py")


def smi(query):
    out = subprocess.run(["nvidia-smi", "--query-%s" % query, "--format=csv,noheader,nounits",
                          "-i", "0"], capture_output=True, text=True).stdout
    return [line.split(", ") for line in out.strip().splitlines() if line.strip()]


def card_used_mib():
    r = smi("gpu=memory.used")
    return int(r[0][0]) if r else -1


def listed(pid):
    return any(int(row[0]) == pid for row in smi("compute-apps=pid,used_memory"))


def status_row(pid):
    s = json.loads(subprocess.run([V, "status", "--json"], capture_output=True,
                                  text=True).stdout)
    r = [p for p in s["processes"] if p["host_pid"] == pid and p["capped"]]
    return r[0] if r else None


def prog(name, *run_args):
    return driven.Case(V, case, name, run_args, "park-%s.err" % name)


try:
    import torch  # noqa: F401
except ImportError:
    print("skip: no PyTorch")
    sys.exit(0)
doc = subprocess.run([V, "doctor"], capture_output=True, text=True).stdout
if not any(line.startswith("OK") and "driver.checkpoint" in line for line in doc.splitlines()):
    print("skip: no checkpoint API here: " +
          "".join(line for line in doc.splitlines() if "driver.checkpoint" in line))
    sys.exit(0)
free_mib = int(smi("gpu=memory.free")[0][0])
if free_mib < 16 * 1024:
    print("skip: GPU 0 has %d MiB free, the case needs 16 GiB" % free_mib)
    sys.exit(0)

# 1. vramctl park and the next call.
a = prog("pa", "--limit", "20G", "--park-idle=manual")
check(a.ask("fill 8") == ["filled", "8"], "A holds 8 GiB of random tensors")
s0 = a.ask("sum")
before = card_used_mib()
check(listed(a.pid), "nvidia-smi lists A (%d MiB used on the card)" % before)
time.sleep(1.5)  # idle for the second a park asks
t0 = time.monotonic()
r = subprocess.run([V, "park", str(a.pid)], capture_output=True, text=True)
took = time.monotonic() - t0
check(r.returncode == 0 and "parked" in r.stdout, "vramctl park A (%.1f s): %s %s"
      % (took, r.stdout.strip(), r.stderr.strip()))
during = card_used_mib()
check(before - during >= 8 * 1024 - 256,
      "the card's figure drops by A's 8 GiB: %d -> %d MiB" % (before, during))
check(not listed(a.pid), "nvidia-smi no longer lists A")
row = status_row(a.pid)
check(row is not None and row["parked"] and row["parked_bytes"] >= 8 * GiB,
      "vramctl status: A parked with 8 GiB on the host: %s" % row)
t0 = time.monotonic()
s1 = a.ask("sum")
took = time.monotonic() - t0
check(s1 == s0, "A's next call brings it back (%.1f s with the sum): checksum %s = %s"
      % (took, s1, s0))
after = card_used_mib()
check(abs(after - before) <= 256, "the card's figure is back: %d MiB (before %d)"
      % (after, before))
row = status_row(a.pid)
check(row is not None and not row["parked"], "vramctl status: A runs again")
a.end()

# 2. Parked by itself when idle.
b = prog("pb", "--limit", "8G", "--park-idle=3s")
check(b.ask("fill 2") == ["filled", "2"], "B holds 2 GiB")
s0 = b.ask("sum")
end = time.monotonic() + 30
row = None
while time.monotonic() < end:
    row = status_row(b.pid)
    if row and row["parked"]:
        break
    time.sleep(0.5)
check(row is not None and row["parked"], "B parked by itself after 3 s idle: %s" % row)
check(b.ask("sum") == s0, "B's next call brings it back, the same checksum")
b.end()

# 3. A waiter woken by a neighbour's free.
x = prog("pw", "--limit", "4G")
y = prog("pw", "--limit", "4G", "--wait=30")
check(x.ask("alloc 3072") == ["ok"], "X holds 3 GiB of the 4 GiB group")
y.send("alloc 2048")
check(y.reply(3) is None, "Y's 2 GiB waits while X holds 3")
row = status_row(y.pid)
check(row is not None and row["state"] == "waiting", "vramctl status: Y waiting: %s" % row)
t_free = int(x.ask("t")[1])
x.ask("free")
got = y.reply(30)
t_grant = int(y.ask("t")[1])
check(got == ["ok"], "Y is granted once X frees: %s" % got)
check(t_grant > t_free, "after the free")
print("Y's grant came %.3f s after X's free began (PyTorch's free and empty_cache included)"
      % ((t_grant - t_free) / 1e9))
check(t_grant - t_free < 5e9, "within 5 s")
x.end()
y.end()
sys.exit(1 if driven.bad else 0)
