"""PyTorch under a cap: total seen, its own OOM error past the cap, a fixed workload."""
import common
import torch

a = common.args()
dev = torch.device("cuda:0")
free, total = torch.cuda.mem_get_info(0)          # cudaMemGetInfo -> cuMemGetInfo_v2
props_total = torch.cuda.get_device_properties(0).total_memory  # cuDeviceTotalMem_v2
seen = max(total, props_total)


def work():
    x = torch.randn(2048, 2048, device=dev)
    for _ in range(20):
        x = (x @ x).tanh_()
    torch.cuda.synchronize()


oom = continued = False
if a.cap:
    try:
        big = torch.empty(a.cap + 64 * common.MiB, dtype=torch.uint8, device=dev)
    except torch.cuda.OutOfMemoryError:  # PyTorch's own OOM error
        oom = True
    torch.cuda.empty_cache()
    try:
        small = torch.ones(16 * common.MiB, dtype=torch.uint8, device=dev)
        continued = int(small.sum().item()) == 16 * common.MiB
        del small
    except RuntimeError:
        continued = False
common.report(a.cap, seen, oom, continued, common.timed(work))
