"""park_case.py - a PyTorch program driven line by line on stdin, for
bench/gpu/park.py (#36): prints "ready PID", then answers each line:

  fill GIB   GIB GiB of random tensors (1 GiB each): "filled N" (N: GiB held)
  sum        a checksum of every tensor it holds: "sum HEX" (the first
             driver call after a park: it brings the memory back first)
  alloc MIB  one more block of MIB MiB: "ok" or "oom" (waits with --wait)
  free       frees every block and empties PyTorch's cache: "ok"
  t          "t NS": time.monotonic_ns(), to order events across processes
"""
import hashlib
import os
import sys
import time

import torch

GiB = 1 << 30
MiB = 1 << 20
blocks = []
torch.cuda.init()
torch.zeros(1, device="cuda")  # the context, before "ready"
print("ready %d" % os.getpid(), flush=True)
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "fill":
        g = torch.Generator(device="cuda")
        g.manual_seed(36)
        for _ in range(int(w[1])):
            blocks.append(torch.randint(0, 256, (GiB,), dtype=torch.uint8, device="cuda",
                                        generator=g))
        torch.cuda.synchronize()
        print("filled %d" % len(blocks), flush=True)
    elif w[0] == "sum":
        h = hashlib.sha256()
        for b in blocks:
            # Sums of 64 MiB slices, computed on the GPU: every byte is read.
            h.update(b.view(-1, 64 * MiB).to(torch.int64).sum(dim=1).cpu().numpy().tobytes())
        print("sum %s" % h.hexdigest()[:16], flush=True)
    elif w[0] == "alloc":
        try:
            blocks.append(torch.empty(int(w[1]) * MiB, dtype=torch.uint8, device="cuda"))
            torch.cuda.synchronize()
            print("ok", flush=True)
        except torch.cuda.OutOfMemoryError:
            print("oom", flush=True)
    elif w[0] == "free":
        blocks.clear()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        print("ok", flush=True)
    elif w[0] == "t":
        print("t %d" % time.monotonic_ns(), flush=True)
