"""Shared by the per-framework cases: arguments, timing, the result line.

Each case prints one last line: "total=... oom=... continued=... time=...s
PASS|FAIL". With --cap 0 it runs uncapped and only the time matters.
"""
import argparse
import time

MiB = 1024 * 1024


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--cap", type=int, default=0, help="the cap in bytes (0: uncapped)")
    return p.parse_args()


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
