"""wait_test.py - the checks of wait.sh (read it first)."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memctl  # noqa: E402
from memctl import Prog, check  # noqa: E402

V = os.environ["V"]


def member(name, group, wait=None, wrap=None):
    env = {"VRAMCTL_GROUP": group, "VRAMCTL_LIMIT": "1G"}
    if wait:
        env["VRAMCTL_WAIT"] = wait
    return Prog(name, env, wrap=wrap)


def status():
    return json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True,
                                     check=True).stdout)


def issue_case():
    a = member("a", "g1")
    b = member("b", "g1", wait="10")
    check(a.alloc(800) == "ok", "a holds 800 MiB")
    b.send("a 600")
    check(b.reply(2.0) is None, "b's 600 MiB waits while a holds 800 of the 1 GiB")
    # While it waits, the monitors say so.
    s = status()
    w = [p for p in s["processes"] if p["host_pid"] == b.pid]
    check(w and w[0]["state"] == "waiting" and w[0]["waiting_bytes"] == 600 << 20,
          "status --json: b waits for 600 MiB: %s" % w)
    check(w and w[0]["waiting_set_aside_bytes"] == 224 << 20,
          "the room there was is set aside for it: %s" % w)
    table = subprocess.run([V, "status"], capture_output=True, text=True).stdout
    check("waits for 600 MiB on GPU 0 since" in table, "status's table says it: %s" % table)
    prom = subprocess.run([V, "status", "--format", "prom"], capture_output=True,
                          text=True).stdout
    check("vramctl_process_waiting_bytes{" in prom and " 629145600" in prom,
          "Prometheus: vramctl_process_waiting_bytes: %s" % prom[-400:])
    t_free = a.now()
    a.free()
    got = b.reply(5.0)
    t_grant = b.now()
    check(got == "ok", "b is granted once a frees (before the 5 s deadline; the slice is 60 s): %s"
          % got)
    check(t_grant > t_free, "the grant comes after the release")
    check(t_grant - t_free < 5 * 10**9, "within the deadline: %.3f s" % ((t_grant - t_free) / 1e9))
    b.blocks.append(600 << 20)
    s = status()
    w = [p for p in s["processes"] if p["host_pid"] == b.pid]
    check(w and w[0]["state"] == "alive" and w[0]["denied_count"] == 0 and
          w[0]["in_use_bytes"] == 600 << 20,
          "granted after a wait: not a denial: %s" % w)
    b.free()
    # The same without a wait: refused at once, as a denial.
    c = member("c", "g1")
    check(a.alloc(800) == "ok", "a holds 800 MiB again")
    c.send("a 600")
    check(c.reply(2.0) == "oom", "without --wait the request is refused at once")
    check("denied 600 MiB on GPU 0" in c.stderr(), "said as a denial: %s" % c.stderr())
    for p in (a, b, c):
        p.end()


def time_out():
    a = member("a", "g2")
    b = member("b", "g2", wait="1s")
    check(a.alloc(800) == "ok", "a holds 800 MiB")
    b.send("a 600")
    check(b.reply(10.0) == "oom", "a wait that runs out is refused")
    check("waited 1 s for 600 MiB on GPU 0: cap 1 GiB, 800 MiB in use" in b.stderr(),
          "the line says how long it waited: %s" % b.stderr())
    s = status()
    w = [p for p in s["processes"] if p["host_pid"] == b.pid]
    check(w and w[0]["state"] == "alive" and w[0]["in_use_bytes"] == 0 and
          w[0]["denied_count"] == 1,
          "what it set aside went back; the refusal is counted once: %s" % w)
    for p in (a, b):
        p.end()


def deadlock():
    a = member("a", "g3", wait="10")
    b = member("b", "g3", wait="10")
    check(a.alloc(900) == "ok", "a holds 900 MiB")
    b.send("a 200")
    check(b.reply(1.0) is None, "b waits for 200 MiB (a, not waiting, could free)")
    a.send("a 200")
    got = a.reply(5.0)
    check(got == "oom", "every member waiting: the newest (a) fails at once: %s" % got)
    check("without waiting: every other live member of the group is waiting" in a.stderr(),
          "said: %s" % a.stderr())
    a.free()
    check(b.reply(5.0) == "ok", "the older wait is served once room is made")
    b.blocks.append(200 << 20)
    a.send("a 2000")
    check(a.reply(5.0) == "oom" and "the request alone is more than the cap" in a.stderr(),
          "a request past the cap never waits: %s" % a.stderr())
    for p in (a, b):
        p.end()
    alone = member("alone", "g4", wait="10")
    alone.send("a 2000")
    check(alone.reply(5.0) == "oom", "more than the cap, alone: at once")
    check(alone.alloc(900) == "ok", "alone holds 900")
    alone.send("a 200")
    check(alone.reply(5.0) == "oom" and "no other live process" in alone.stderr(),
          "alone in its group, a wait could never end: at once: %s" % alone.stderr())
    alone.end()


def report():
    a = member("a", "g5")
    check(a.alloc(800) == "ok", "a holds 800 MiB")
    rep = os.path.join(os.getcwd(), "rep.json")
    trace = os.path.join(os.getcwd(), "trace.json")
    b = member("b", "g5", wrap=[V, "run", "--limit", "1G", "--group", "g5", "--wait=10",
                                "--report=" + rep, "--trace=" + trace, "--"])
    b.send("a 600")
    check(b.reply(1.0) is None, "b (vramctl run --wait) waits")
    a.free()
    check(b.reply(5.0) == "ok", "and is granted")
    b.blocks.append(600 << 20)
    b.free()
    b.end()
    a.end()
    r = json.load(open(rep))
    d = r["devices"][0]
    check(d["waits"] == 1 and d["waits_granted"] == 1 and 0 < d["waited_s"] < 5,
          "the report counts the wait and the time waited: %s" % d)
    t = json.load(open(trace))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    w = [e for e in ev if e.get("name") == "waited (granted)"]
    check(len(w) == 1 and w[0]["ph"] == "X" and w[0]["args"]["bytes"] == 600 << 20 and
          w[0]["dur"] > 0, "the trace marks the wait, a span on b's line: %s" % w)


issue_case()
time_out()
deadlock()
report()
sys.exit(1 if memctl.bad else 0)
