"""Shared by the per-framework cases: arguments, timing, the result line.

Each case prints one last line: "total=... oom=... continued=... time=...s
PASS|FAIL". With --cap 0 it runs uncapped and only the time matters.
"""
import argparse
import ctypes
import time

MiB = 1024 * 1024


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--cap", type=int, default=0, help="the cap in bytes (0: uncapped)")
    return p.parse_args()


def driver_total(ordinal=0):
    """cuDeviceTotalMem_v2 as the framework's process sees it (through
    dlopen + dlsym, so under vramctl it is the capped answer), or 0."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        total = ctypes.c_size_t()
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            return 0
        if cuda.cuDeviceTotalMem_v2(ctypes.byref(total), dev) != 0:
            return 0
        return total.value
    except OSError:
        return 0


def timed(fn, repeat=3):
    """Best of a few runs of fn(), in seconds."""
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return best


def report(cap, total, oom, continued, seconds, note=""):
    if cap == 0:
        print(f"total={total // MiB} MiB time={seconds:.3f}s {note}".rstrip())
        return
    ok = total <= cap and oom and continued
    print(
        f"total={total // MiB} MiB (cap {cap // MiB} MiB) oom_raised={oom} "
        f"continued={continued} time={seconds:.3f}s {note}{'PASS' if ok else 'FAIL'}"
    )
