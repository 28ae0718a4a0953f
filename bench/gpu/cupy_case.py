"""CuPy under a cap: total seen, its own OOM error past the cap, a fixed workload."""
import common
import cupy

a = common.args()
free, total = cupy.cuda.runtime.memGetInfo()


def work():
    x = cupy.random.standard_normal((2048, 2048), dtype=cupy.float32)
    for _ in range(20):
        x = cupy.tanh(x @ x)
    cupy.cuda.Device(0).synchronize()


oom = continued = False
if a.cap:
    try:
        big = cupy.empty(a.cap + 64 * common.MiB, dtype=cupy.uint8)
    except cupy.cuda.memory.OutOfMemoryError:  # CuPy's own OOM error
        oom = True
    cupy.get_default_memory_pool().free_all_blocks()
    try:
        small = cupy.ones(16 * common.MiB, dtype=cupy.uint8)
        continued = int(small.sum()) == 16 * common.MiB
        del small
    except cupy.cuda.memory.OutOfMemoryError:
        continued = False
common.report(a.cap, total, oom, continued, common.timed(work))
