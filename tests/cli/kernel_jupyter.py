"""Starts kernels of a vramctl kernelspec through jupyter_client's
KernelManager and runs cells in them (driven by tests/cli/kernel.sh).

  kernel_jupyter.py NAME CAP_BYTES

Checks: a cell reaches the (simulated) driver through ctypes and sees
total = the cap; two kernels on one spec share one group (the second is
refused what the first holds); an interrupt reaches the kernel itself
(the process Jupyter started is the kernel: vramctl run --exec).
"""
import os
import sys

from jupyter_client import KernelManager

NAME, CAP = sys.argv[1], int(sys.argv[2])
HOLD = CAP * 6 // 10

CELL = """
import ctypes, os
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, total = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_size_t()
ptr = ctypes.c_uint64()
assert cu.cuInit(0) == 0
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuDeviceTotalMem_v2(ctypes.byref(total), dev) == 0
rc = cu.cuMemAlloc_v2(ctypes.byref(ptr), %d)
print("RESULT", total.value, rc, os.environ.get("VRAMCTL_GROUP"), os.getpid())
""" % HOLD

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run_cell(kc, code, timeout=60):
    """Runs code; returns its stdout text."""
    out = []
    msg_id = kc.execute(code)
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = msg["msg_type"], msg["content"]
        if t == "stream":
            out.append(c["text"])
        elif t == "error":
            out.append("ERROR %s: %s" % (c["ename"], c["evalue"]))
        elif t == "status" and c["execution_state"] == "idle":
            return "".join(out)


def start():
    km = KernelManager(kernel_name=NAME)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def result(text):
    for line in text.splitlines():
        if line.startswith("RESULT "):
            total, rc, group, pid = line.split()[1:]
            return int(total), int(rc), group, int(pid)
    print(text, file=sys.stderr)
    return None


km1, kc1 = start()
km2 = None
try:
    r1 = result(run_cell(kc1, CELL))
    check(r1 is not None, "kernel 1 ran the cell")
    if r1:
        check(r1[0] == CAP, "kernel 1 sees total = the cap (%d, not %d)" % (r1[0], CAP))
        check(r1[1] == 0, "kernel 1's allocation under the cap succeeds (rc %d)" % r1[1])
        # The kernel is the process Jupyter started (exec'ed in place).
        check(r1[3] == km1.provisioner.process.pid,
              "the kernel's pid %d is the started process %d" % (r1[3], km1.provisioner.process.pid))
    km2, kc2 = start()
    r2 = result(run_cell(kc2, CELL))
    check(r2 is not None, "kernel 2 ran the cell")
    if r1 and r2:
        check(r2[2] == r1[2], "one group for both kernels (%s, %s)" % (r1[2], r2[2]))
        check(r2[1] == 2, "kernel 2 is refused what kernel 1 holds: "
              "CUDA_ERROR_OUT_OF_MEMORY (rc %d)" % r2[1])
    # An interrupt stops a running cell and the kernel lives on.
    mid = kc2.execute("import sys, time\nprint('started'); sys.stdout.flush()\n"
                      "for _ in range(600): time.sleep(0.1)\nprint('not interrupted')")
    while True:  # the cell is running once it has printed
        msg = kc2.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == mid and msg["msg_type"] == "stream" \
                and "started" in msg["content"]["text"]:
            break
    km2.interrupt_kernel()
    text = ""
    while True:
        msg = kc2.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != mid:
            continue
        if msg["msg_type"] == "error":
            text += msg["content"]["ename"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    check("KeyboardInterrupt" in text, "the interrupt reached the kernel (%r)" % text)
    alive = run_cell(kc2, "print('alive', flush=True)")
    check("alive" in alive, "the kernel lives after the interrupt (%r)" % alive)
    # A restart starts the kernel again under the cap.
    km2.restart_kernel(now=True)
    kc2.wait_for_ready(timeout=60)
    r3 = result(run_cell(kc2, CELL))
    check(r3 is not None and r3[0] == CAP, "after a restart the cap holds")
finally:
    kc1.stop_channels()
    km1.shutdown_kernel(now=True)
    if km2:
        kc2.stop_channels()
        km2.shutdown_kernel(now=True)

sys.exit(1 if failures else 0)
