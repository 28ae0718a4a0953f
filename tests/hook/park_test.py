"""park_test.py - the checks of park.sh (read it first)."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memctl  # noqa: E402
from memctl import Prog, check  # noqa: E402

V = os.environ["V"]
MiB = 1 << 20


def member(name, group, limit="1G", idle=None, wait=None, budget=None, extra=None, wrap=None):
    env = {"VRAMCTL_GROUP": group, "VRAMCTL_LIMIT": limit}
    if idle:
        env["VRAMCTL_PARK_IDLE"] = idle
    if wait:
        env["VRAMCTL_WAIT"] = wait
    if budget:
        env["VRAMCTL_PARK_BUDGET"] = budget
    env.update(extra or {})
    return Prog(name, env, wrap=wrap)


def status():
    return json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True,
                                     check=True).stdout)


def row(s, pid):
    r = [p for p in s["processes"] if p["host_pid"] == pid and p["capped"]]
    return r[0] if r else None


def group(s, name):
    g = [x for x in s["groups"] if x["name"] == name]
    return g[0] if g else None


def card_used(s):
    return s["devices"][0]["used_bytes"]


def until_parked(pid, secs=15):
    """Status's row of pid once it shows parked (None when it never did)."""
    end = time.time() + secs
    while time.time() < end:
        r = row(status(), pid)
        if r and r["parked"]:
            return r
        time.sleep(0.1)
    return None


def park_cli(*args):
    return subprocess.run([V, *args], capture_output=True, text=True)


def idle_round_trip(procaddr=False):
    """As a framework over cudart gets its entry points (cuGetProcAddress)
    with procaddr, else as one that uses dlsym."""
    base = card_used(status())
    a = member("a", "p1", idle="1", extra={"GP_PROCADDR": "1"} if procaddr else None)
    check(a.alloc(600) == "ok", "a holds 600 MiB")
    check(a.ask("p") == "ok", "a writes its pattern")
    check(card_used(status()) == base + 600 * MiB, "the card holds a's 600 MiB")
    r = until_parked(a.pid)
    check(r is not None, "a, idle for its 1 s, is parked")
    s = status()
    g = group(s, "p1")
    check(r and r["state"] == "parked" and r["parked_bytes"] == 600 * MiB and
          r["parked_since_ms"] > 0, "status: parked, 600 MiB on the host: %s" % r)
    check(g and g["parked_bytes"] == 600 * MiB and g["devices"][0]["in_use_bytes"] == 0,
          "the group's books no longer count it on the card: %s" % g)
    check(card_used(s) == base, "the card (NVML) holds nothing for it: %d" % card_used(s))
    table = subprocess.run([V, "status"], capture_output=True, text=True).stdout
    check("is parked since" in table and "600 MiB of GPU 0 on the host" in table,
          "status's table says it: %s" % table)
    prom = subprocess.run([V, "status", "--format", "prom"], capture_output=True,
                          text=True).stdout
    check("vramctl_process_parked_bytes{" in prom, "Prometheus: vramctl_process_parked_bytes")
    # Its next driver call, one vramctl does not wrap (cuMemcpyDtoH).
    check(a.ask("c") == "ok", "its next call brings it back, the bytes it wrote intact")
    s = status()
    r = row(s, a.pid)
    check(r and not r["parked"] and r["in_use_bytes"] == 600 * MiB and
          card_used(s) == base + 600 * MiB, "back on the card and in the books: %s" % r)
    check("parked after 1 s" not in a.stderr(), "said at info only, not by default")
    a.end()


def room_taken():
    a = member("a", "p2", idle="1", wait="1s")
    b = member("b", "p2")
    check(a.alloc(600) == "ok" and a.ask("p") == "ok", "a holds 600 MiB, written")
    check(until_parked(a.pid) is not None, "a is parked")
    check(b.alloc(900) == "ok", "its room is b's while it is parked")
    got = a.ask("c")
    check(got == "err 2", "no room within its 1 s wait: the call fails with out-of-memory: %s"
          % got)
    check("could not be brought back" in a.stderr() and "its group had no room" in a.stderr(),
          "said: %s" % a.stderr())
    r = row(status(), a.pid)
    check(r and r["parked"], "it stays parked")
    b.free()
    check(a.ask("c") == "ok", "once the room is back, the next call restores it, intact")
    for p in (a, b):
        p.end()


def card_full():
    a = member("a", "p3", idle="1")
    check(a.alloc(600) == "ok" and a.ask("p") == "ok", "a holds 600 MiB, written")
    check(until_parked(a.pid) is not None, "a is parked")
    # Outside vramctl, a program takes all the card has left.
    out = Prog("outside", {"LD_PRELOAD": ""})
    free_b = int(out.ask("i").split()[1])
    check(out.alloc(free_b // MiB - 100) == "ok", "outside takes the card's free memory")
    got = a.ask("c")
    check(got == "err 2", "the card has no room: the restore fails that call: %s" % got)
    check("the card has no room for it" in a.stderr(), "said: %s" % a.stderr())
    out.end()
    check(a.ask("c") == "ok", "the card has room again: restored, intact")
    a.end()


def killed():
    base = card_used(status())
    a = member("a", "p4", idle="1")
    keep = member("keep", "p4")
    check(a.alloc(600) == "ok", "a holds 600 MiB")
    check(until_parked(a.pid) is not None, "a is parked")
    g = group(status(), "p4")
    check(g and g["parked_bytes"] == 600 * MiB, "the budget holds its 600 MiB: %s" % g)
    a.kill()
    # The next member to need the books reclaims the dead: a join.
    c = member("c", "p4")
    check(c.alloc(2) == "ok", "a new member joins")
    s = status()
    g = group(s, "p4")
    check(g and g["parked_bytes"] == 0 and g["devices"][0]["in_use_bytes"] == 2 * MiB and
          g["devices"][0]["dead_in_use_bytes"] == 0,
          "killed while parked: nothing left in the books or the budget: %s" % g)
    check(card_used(s) == base + 2 * MiB, "nor on the card: %d" % (card_used(s) - base))
    for p in (keep, c):
        p.end()


def cli():
    a = member("a", "p5", wrap=[V, "run", "--limit", "1G", "--group", "p5", "--park-idle=manual",
                                "--"])
    check(a.alloc(300) == "ok" and a.ask("p") == "ok", "a (vramctl run --park-idle=manual) holds "
          "300 MiB")
    time.sleep(1.3)
    r = park_cli("park", str(a.pid))
    check(r.returncode == 0 and "parked, 300 MiB moved to host memory" in r.stdout,
          "vramctl park PID: %d %s %s" % (r.returncode, r.stdout, r.stderr))
    check(row(status(), a.pid)["parked"], "status shows it parked")
    r = park_cli("unpark", "p5")
    check(r.returncode == 0 and "back on the GPU" in r.stdout,
          "vramctl unpark GROUP: %d %s %s" % (r.returncode, r.stdout, r.stderr))
    check(not row(status(), a.pid)["parked"], "status shows it back")
    check(a.ask("c") == "ok", "intact")
    # Busy: refused.
    a.send("i")
    r = park_cli("park", str(a.pid))
    a.reply(5.0)
    check(r.returncode == 1 and "busy" in r.stdout, "a busy process is not parked: %s" % r.stdout)
    # Without --park-idle: nothing listens.
    b = member("b", "p5")
    check(b.alloc(10) == "ok", "b holds 10 MiB")
    r = park_cli("park", str(b.pid))
    check(r.returncode == 1 and "does not run with --park-idle" in r.stdout,
          "a process without --park-idle cannot be parked: %s" % r.stdout)
    r = park_cli("park", "p5")
    check(r.returncode == 1 and "runs without --park-idle" in r.stdout,
          "vramctl park GROUP says which members cannot be: %s" % r.stdout)
    r = park_cli("park", "nosuchgroup")
    check(r.returncode == 125 and "no group 'nosuchgroup'" in r.stderr, "no such group")
    for p in (a, b):
        p.end()
    # A park budget too small: refused, said why.
    c = member("c", "p6", idle="manual", budget="100M")
    check(c.alloc(300) == "ok", "c holds 300 MiB, with a 100 MiB park budget")
    time.sleep(1.3)
    r = park_cli("park", str(c.pid))
    check(r.returncode == 1 and "park budget is 100 MiB" in r.stdout,
          "a park past the budget is refused: %s" % r.stdout)
    c.end()


def never_parked(what, group, why, extra=None, managed=False):
    """A member idle past its time (1 s) that must never be parked: it
    keeps its 200 MiB (and 1 MiB managed with managed) on the card, runs
    on, and said why once."""
    base = card_used(status())
    a = member("a", group, idle="1", extra=extra)
    check(a.alloc(200) == "ok" and (not managed or a.ask("m 1") == "ok"),
          "a (%s) holds 200 MiB" % what)
    time.sleep(2.5)
    check(card_used(status()) >= base + 200 * MiB, "%s: still on the card after its idle time"
          % what)
    check("never parked: " + why in a.stderr(), "%s: said why: %s" % (what, a.stderr()))
    check(a.ask("i").startswith("info"), "%s: it runs on" % what)
    a.end()


def never():
    # Its own books (its registry directory unsafe): no group's budget
    # bounds a host copy.
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), "open-registry")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    never_parked("its own books", "p7", "it keeps its own books",
                 extra={"VRAMCTL_REGISTRY_DIR": d})
    # A driver before CUDA 12.8 has no checkpoint API.
    lp = os.path.join(os.environ["VR_BUILD"], "sim", "cuda-11.5")
    never_parked("a CUDA 11.5 driver", "p8", "the driver has no checkpoint API",
                 extra={"LD_LIBRARY_PATH": lp + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
                        "VRAMSIM_DRIVER_VERSION": "11050"})
    # Managed memory, which the driver's checkpoint does not support (a
    # failed checkpoint may leave the process broken): refused before the
    # driver is asked.
    never_parked("managed memory", "p9", "it used managed memory (cuMemAllocManaged)",
                 managed=True)


def guarantee():
    # A borrower fills the card before any guarantee exists.
    b = member("b", "borrow", limit="16G", idle="manual", budget="16G")
    check(b.alloc(14 * 1024) == "ok", "the borrower holds 14 GiB of the 16 GiB card")
    g = member("g", "owed", limit="8G",
               extra={"VRAMCTL_GUARANTEE": "4G", "VRAMCTL_LOG": "info"})
    time.sleep(1.3)  # the borrower idle for a second
    # Its guarantee does not fit (2 GiB free) until the idle borrower is
    # parked for it: then it is given, and its 3 GiB are served.
    got = g.alloc(3 * 1024)
    check(got == "ok", "the guaranteed group's 3 GiB, owed and held by the borrower: the "
          "borrower is parked and it is served: %s %s" % (got, g.stderr()))
    check("parked for this group's guarantee" in g.stderr() and
          "cannot be given" not in g.stderr(),
          "the guarantee is given by parking the borrower, said: %s" % g.stderr())
    r = row(status(), b.pid)
    check(r and r["parked"] and r["parked_bytes"] == 14 * 1024 * MiB,
          "the borrower is parked, not killed: %s" % r)
    check(b.alive(), "the borrower lives")
    # Its next call: the card has 13 GiB free, not its 14: fails, said.
    got = b.ask("i")
    check(got.startswith("info") or got == "err info",
          "a memory query is answered whatever: %s" % got)
    g.free()
    check(b.ask("i").startswith("info"), "once the guaranteed group frees, it comes back")
    r = row(status(), b.pid)
    check(r and not r["parked"], "the borrower runs again: %s" % r)
    for p in (g, b):
        p.end()


def run_guarantee():
    # `vramctl run --guarantee`, which has the guarantee given before the
    # command starts: without room, the idle borrower is parked for it,
    # said, and the command runs (before: refused, exit 125).
    b = member("b", "borrow2", limit="16G", idle="manual", budget="16G")
    check(b.alloc(14 * 1024) == "ok", "the borrower holds 14 GiB of the 16 GiB card")
    time.sleep(1.3)
    r = subprocess.run([V, "run", "--limit", "8G", "--guarantee", "4G", "--", "true"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "parked for it (14 GiB)" in r.stderr,
          "run --guarantee 4G parks the idle borrower and runs: %d %s" %
          (r.returncode, r.stderr))
    row_b = row(status(), b.pid)
    check(row_b and row_b["parked"] and b.alive(), "the borrower is parked, alive: %s" % row_b)
    check(b.ask("i").startswith("info"), "the guarantee gone with the run, it comes back")
    row_b = row(status(), b.pid)
    check(row_b and not row_b["parked"], "the borrower runs again: %s" % row_b)
    # A busy borrower is not parked: the guarantee is refused as before.
    check(b.ask("p") == "ok", "the borrower is busy")
    r = subprocess.run([V, "run", "--limit", "8G", "--guarantee", "4G", "--", "true"],
                       capture_output=True, text=True)
    check(r.returncode == 125 and "does not fit on the device now" in r.stderr and
          "parked" not in r.stderr, "busy: refused, nobody parked: %d %s" %
          (r.returncode, r.stderr))
    # With --wait the run asks again while it waits: the borrower, busy
    # now, is idle a second later and parked then.
    check(b.ask("p") == "ok", "the borrower is busy again")
    r = subprocess.run([V, "run", "--limit", "8G", "--guarantee", "4G", "--wait=20", "--",
                        "true"], capture_output=True, text=True)
    check(r.returncode == 0 and "parked for it (14 GiB)" in r.stderr,
          "run --wait --guarantee: parked once idle, and runs: %d %s" %
          (r.returncode, r.stderr))
    check(b.ask("i").startswith("info"), "it comes back after the run")
    b.end()


idle_round_trip()
idle_round_trip(procaddr=True)
room_taken()
card_full()
killed()
cli()
never()
guarantee()
run_guarantee()
sys.exit(1 if memctl.bad else 0)
