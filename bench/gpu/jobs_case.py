"""bench/gpu/jobs_case.py - one PyTorch process of bench/gpu/jobs.sh: takes
MIB MiB on GPU 0 in one tensor, prints "ready 1" (granted) or "ready 0"
(PyTorch's out-of-memory error), then holds it until its stdin closes."""
import sys

import torch

mib = int(sys.argv[1])
held = None
try:
    held = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    ok = 1
except torch.cuda.OutOfMemoryError:
    ok = 0
print("ready", ok, flush=True)
sys.stdin.read()
