"""elastic_case.py - a PyTorch program driven line by line on stdin, for
bench/gpu/elastic.py (#26): prints "ready PID", then answers each line:

  fill GIB   allocates 1 GiB blocks until GIB are held or PyTorch's OOM:
             "filled N oom|done" (N: GiB held)
  free N     frees N of its blocks: "ok"
  info       "info FREE TOTAL" (torch.cuda.mem_get_info, bytes)
"""
import os
import sys

import torch

GiB = 1 << 30
blocks = []
torch.cuda.init()
print("ready %d" % os.getpid(), flush=True)
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "fill":
        want, oom = int(w[1]), False
        while len(blocks) < want:
            try:
                blocks.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
            except torch.cuda.OutOfMemoryError:
                oom = True
                break
        print("filled %d %s" % (len(blocks), "oom" if oom else "done"), flush=True)
    elif w[0] == "free":
        for _ in range(min(int(w[1]), len(blocks))):
            blocks.pop()
        torch.cuda.empty_cache()
        print("ok", flush=True)
    elif w[0] == "info":
        free, total = torch.cuda.mem_get_info()
        print("info %d %d" % (free, total), flush=True)
