"""bench/gpu/elastic.py - guarantees and caps that change (#26) on a real
GPU with PyTorch:

 1. A: --limit 100G --guarantee 40G fills 50 GiB; B starts later with
    --guarantee 60G and takes 59 GiB (its context is the rest): it gets them; A, filling on, is
    refused (PyTorch's OOM) before the card runs out for B, and is not
    killed.
 2. `vramctl limit` lowers and raises A's cap while it runs:
    torch.cuda.mem_get_info()'s total follows.

  python3 bench/gpu/elastic.py BUILD_DIR      (exit 0 when every check held)

Needs a GPU of at least 110 GiB (an H200) and PyTorch; skips otherwise.
"""
import os
import subprocess
import sys

import driven
from driven import check

GiB = 1 << 30
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/gcc-release")
V = os.path.join(build, "vramctl")
case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elastic_case.py")


def total_gib():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,"
                          "nounits", "-i", "0"], capture_output=True, text=True).stdout
    return int(out.split()[0]) / 1024 if out.strip() else 0


def prog(name, *run_args):
    return driven.Case(V, case, name, run_args, "elastic-%s.err" % name)


try:
    import torch  # noqa: F401
except ImportError:
    print("skip: no PyTorch")
    sys.exit(0)
if total_gib() < 110:
    print("skip: the GPU holds %.0f GiB, the case needs 110" % total_gib())
    sys.exit(0)
a = prog("ga", "--limit", "100G", "--guarantee", "40G")
r = a.ask("fill 50")
check(r[:2] == ["filled", "50"], "A takes 50 GiB (40 guaranteed, 10 borrowed): %s" % r)
b = prog("gb", "--limit", "70G", "--guarantee", "60G")
r = a.ask("fill 100")
check(r[0] == "filled" and r[2] == "oom", "A, filling on, is refused: %s" % r)
held_a = int(r[1])
r = b.ask("fill 59")  # its context counts against its guarantee too
check(r == ["filled", "59", "done"], "B gets its 60 GiB guarantee (59 GiB + its context): %s" % r)
check(a.p.poll() is None, "A is not killed")
check("guarantee" in open("elastic-ga.err").read(), "A's denial names the guarantee")
print("A held %d GiB at most" % held_a)
# 2. The cap of a running PyTorch process.
a.ask("free %d" % held_a)
for cap in (20, 90):
    rc = subprocess.run([V, "limit", "ga", "%dG" % cap]).returncode
    info = a.ask("info")
    check(rc == 0 and info[0] == "info" and int(info[2]) == cap * GiB,
          "vramctl limit ga %dG: mem_get_info's total follows: %s" % (cap, info))
for p in (a, b):
    p.end(timeout=60)
sys.exit(1 if driven.bad else 0)
