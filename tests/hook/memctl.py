"""memctl.py - drives tests/hook/memctl programs from Python (limit.sh,
guarantee.sh, tests/report/report_limit.sh): one line in, one line out."""
import os
import select
import signal
import subprocess
import sys

GiB, MiB = 1 << 30, 1 << 20
V = os.environ.get("V", "vramctl")  # the vramctl under test


class Prog:
    """A memctl process under the environment given (LD_PRELOAD set), or
    run by the command wrap (a list: `vramctl run ...`; no LD_PRELOAD)."""

    def __init__(self, name, env, errdir=".", wrap=None):
        e = dict(os.environ) if wrap else dict(os.environ, LD_PRELOAD=os.environ["LIB"])
        e.update(env)
        self.name = name
        self.err = os.path.join(errdir, "err-" + name)
        self.p = subprocess.Popen([*(wrap or []), os.environ["MEMCTL"]], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=open(self.err, "a"),
                                  text=True, env=e)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError("%s did not start: %s %s" % (name, line, self.stderr()))
        self.pid = int(line[1])
        self.blocks = []

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def send(self, cmd):
        """Sends a command without waiting for its answer (reply reads it)."""
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def reply(self, timeout):
        """The next answer, or None when none came within timeout seconds."""
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        return self.p.stdout.readline().strip() if r else None

    def now(self):
        """CLOCK_MONOTONIC in the program, in ns (to order events)."""
        return int(self.ask("t").split()[1])

    def alloc(self, mib):
        r = self.ask("a %d" % mib)
        if r == "ok":
            self.blocks.append(mib << 20)
        return r

    def free(self):
        r = self.ask("f")
        if r == "ok":
            self.blocks.pop()
        return r

    def free_all(self):
        self.ask("F")
        self.blocks = []

    def held(self):
        return sum(self.blocks)

    def total(self):
        return int(self.ask("i").split()[2])

    def alive(self):
        return self.p.poll() is None

    def stderr(self):
        try:
            return open(self.err).read()
        except OSError:
            return ""

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(timeout=20)
        self.blocks = []

    def end(self):
        self.p.stdin.close()
        return self.p.wait(timeout=20)


bad = 0


def check(cond, what):
    """Counts a failed check (memctl.bad) and says it."""
    global bad
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        bad += 1
