"""PyTorch past the cap with --spill: a model whose weights are about 1.5x
the cap runs to completion and gives the uncapped result; without spill it
fails with PyTorch's own OOM error.

    python torch_spill.py --cap BYTES --expect ok|oom [--ref FILE]

The model: L square layers (fp32) whose weights together are 1.5x the cap,
applied to a fixed batch (x = tanh(x @ W) per layer, no autograd), seeded,
so the output is the same wherever the weights live. With --cap 0 it runs
uncapped, sizes itself as if the cap were --size, and writes the output's
checksum to --ref; capped, it compares with --ref. Prints one last line:
"... PASS|FAIL". Spilled bytes are read from `vramctl status --json`
($VRAMCTL, when set) while the weights are held.
"""
import argparse
import json
import os
import subprocess
import time

import torch

MiB = 1024 * 1024
p = argparse.ArgumentParser()
p.add_argument("--cap", type=int, default=0)
p.add_argument("--size", type=int, default=0, help="the cap to size the model for")
p.add_argument("--expect", choices=["ok", "oom"], default="ok")
p.add_argument("--ref", default="")
a = p.parse_args()

size = a.cap or a.size
dim = 4096
layer = dim * dim * 4  # bytes per layer
layers = max(2, int(size * 1.5) // layer)
dev = torch.device("cuda:0")
torch.manual_seed(0)


def spilled_bytes():
    v = os.environ.get("VRAMCTL")
    if not v:
        return None
    try:
        out = subprocess.run([v, "status", "--json"], capture_output=True, text=True).stdout
        st = json.loads(out)
        return sum(pr.get("spilled_bytes") or 0 for pr in st["processes"]
                   if pr.get("host_pid") == os.getpid())
    except Exception:
        return None


try:
    t0 = time.perf_counter()
    ws = []
    for i in range(layers):
        g = torch.Generator(device="cpu").manual_seed(i)
        w = torch.randn(dim, dim, generator=g) / dim ** 0.5
        ws.append(w.to(dev))
    x = torch.randn(256, dim, generator=torch.Generator().manual_seed(1234)).to(dev)
    with torch.no_grad():
        for w in ws:
            x = torch.tanh(x @ w)
    torch.cuda.synchronize()
    checksum = float(x.double().sum().item())
    seconds = time.perf_counter() - t0
    spilled = spilled_bytes()
except torch.cuda.OutOfMemoryError as e:
    first = str(e).splitlines()[0]
    ok = a.expect == "oom"
    print(f"layers={layers} ({layers * layer // MiB} MiB) oom: {first} "
          f"{'PASS' if ok else 'FAIL'}")
    raise SystemExit(0 if ok else 1)

if a.cap == 0:
    if a.ref:
        with open(a.ref, "w") as f:
            f.write(repr(checksum))
    print(f"uncapped: layers={layers} ({layers * layer // MiB} MiB) checksum={checksum!r} "
          f"time={seconds:.2f}s")
    raise SystemExit(0)

same = True
if a.ref:
    with open(a.ref) as f:
        ref = float(f.read())
    same = abs(checksum - ref) <= 1e-6 * max(1.0, abs(ref))
ok = a.expect == "ok" and same
sp = "unknown" if spilled is None else f"{spilled // MiB} MiB"
print(f"capped {a.cap // MiB} MiB: layers={layers} ({layers * layer // MiB} MiB) "
      f"checksum={checksum!r} same_as_uncapped={same} spilled={sp} time={seconds:.2f}s "
      f"{'PASS' if ok else 'FAIL'}")
raise SystemExit(0 if ok else 1)
