"""driven.py - what bench/gpu/elastic.py and park.py share: their checks,
and a program driven line by line on stdin under `vramctl run` (a *_case.py
that prints "ready PID" first, then one answer line per command line)."""
import select
import subprocess
import sys

bad = 0


def check(cond, what):
    """Says the check; counts it when it failed (bad)."""
    global bad
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    bad += not cond


class Case:
    """CASE (a python file) under `V run --group GROUP ARGS...`; its stderr
    goes to ERR."""

    def __init__(self, v, case, group, run_args, err):
        self.p = subprocess.Popen([v, "run", "--group", group, *run_args, "--", sys.executable,
                                   case], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(err, "w"), text=True)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError("%s did not start" % group)
        self.pid = int(line[1])

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def reply(self, timeout=300):
        """The next answer's words, or None when none came within timeout s."""
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        return self.p.stdout.readline().split() if r else None

    def ask(self, cmd, timeout=300):
        self.send(cmd)
        return self.reply(timeout)

    def end(self, timeout=120):
        self.p.stdin.close()
        self.p.wait(timeout=timeout)
