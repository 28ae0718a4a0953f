"""guarantee_test.py - the checks of guarantee.sh (read it first)."""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memctl  # noqa: E402
from memctl import Prog, check  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20


def member(name, group, limit, guarantee=None):
    env = {"VRAMCTL_GROUP": group, "VRAMCTL_LIMIT": limit}
    if guarantee:
        env["VRAMCTL_GUARANTEE"] = guarantee
    return Prog(name, env)


def scripted():
    a = member("a", "ga", "12G", "4G")
    check(a.alloc(6 * 1024) == "ok", "no guarantee elsewhere: a borrows 2 GiB past its own")
    b = member("b", "gb", "8G", "6G")
    check(b.alloc(1024) == "ok", "b takes 1 GiB of its guarantee")
    # The card: 16 GiB, 7 held, 9 free; 5 of them b's unused guarantee.
    check(a.alloc(4 * 1024) == "ok", "a borrows the 4 GiB nobody is guaranteed")
    check(a.alloc(1024) == "oom", "a may not borrow b's unused guarantee")
    err = a.stderr()
    check("guaranteed to other groups: group 'gb'" in err and "guarantee of 6 GiB" in err,
          "the denial names who holds the guarantee: %s" % err[-600:])
    check("the card has 5 GiB free, other groups' unused guarantees are 5 GiB" in err and
          "this group: cap 12 GiB, 4 GiB guaranteed, 10 GiB in use" in err,
          "the denial's figures (the request not counted as held): %s" % err[-600:])
    check(a.alive(), "the borrower is not killed")
    check(b.alloc(5 * 1024) == "ok", "b gets the rest of its guarantee")
    c = member("c", "gc", "8G")
    check(c.alloc(64) == "oom", "a group without a guarantee borrows too (nothing left)")
    b.free()
    check(a.alloc(1024) == "oom", "what b freed is still b's guarantee")
    # A guarantee that does not fit: the card has 5 GiB free, all of it b's.
    nums = "asked 8 GiB; the card (16 GiB) has 5 GiB free, other groups' unused guarantees " \
           "are 5 GiB, borrows in flight 0 B"
    r = subprocess.run([os.environ["V"], "run", "--limit", "8G", "--guarantee", "8G", "--",
                        "true"], capture_output=True, text=True)
    check(r.returncode == 125 and nums in r.stderr,
          "run: a guarantee that does not fit is refused with the numbers: %d %s"
          % (r.returncode, r.stderr))
    d = member("d", "gd", "8G", "8G")
    check(d.alloc(64) == "oom", "it borrows like any other (nothing left)")
    check("cannot be given" in d.stderr() and nums in d.stderr(),
          "the environment: a guarantee that does not fit is said: %s" % d.stderr())
    d.end()
    # b's members all killed: its guarantee goes back to the pool.
    b.kill()
    check(a.alloc(1024) == "ok", "b's guarantee returned once its members are gone")
    for p in (a, c):
        check(p.end() == 0, "%s ends normally" % p.name)


class Group:
    """A group of the randomized test. Its guarantee is held while one of
    its members lives; a member that starts a group afresh has it admitted
    only when it fits in the card's free memory then (borrowers may have
    taken it meanwhile): `held` says whether it was."""

    def __init__(self, name, limit, guarantee):
        self.name, self.limit, self.guarantee = name, limit, guarantee
        self.procs = []
        self.held = False
        self.refused = 0

    def use(self):
        return sum(p.held() for p in self.procs)

    def start(self, k):
        g = "%dG" % (self.guarantee // GiB) if self.guarantee else None
        fresh = not self.procs
        p = member("%s-%d" % (self.name, k), self.name, "%dG" % (self.limit // GiB), g)
        self.procs.append(p)
        if self.guarantee and fresh:
            p.total()  # the device set up: the guarantee admitted, or said
            self.held = "cannot be given" not in p.stderr()
            self.refused += not self.held
        return p

    def kill(self, p):
        p.kill()
        self.procs.remove(p)
        if not self.procs:
            self.held = False  # it ends with the group's last member


class Attacker:
    """Another user (attacker.py as $ATTACKER) holding read locks on every
    byte of the device book and on the board's first byte, and now and
    then churning locks and trying to write the book."""

    def __init__(self, user, script):
        self.p = subprocess.Popen(["runuser", "-u", user, "--", "python3", script],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        check(self.p.stdout.readline().startswith("ready"), "the attacker starts")
        self.book = None

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def attack(self):
        d = os.environ["VRAMCTL_DEVICE_DIR"]
        if not self.book:
            names = [n for n in os.listdir(d) if n.startswith("vramctl-dev-") and
                     not n.endswith(".lock")]
            if not names:
                return
            self.book = os.path.join(d, names[0])
            for start, length in ((0, 4096 + 64 * 320), (1, 1), (1 << 40, 1)):
                check(self.ask("lock %s %d %d" % (self.book, start, length)) == "ok",
                      "the attacker locks the book")
        r = self.ask("churn %s 5" % self.book)
        check(r == "ok", "the attacker never writes the book: %s" % r)

    def end(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)


def randomized(steps):
    rng = random.Random(int(os.environ.get("GUARANTEE_SEED", "2612")))
    attacker = Attacker(os.environ["ATTACKER"], os.environ["ATTACKER_PY"]) \
        if os.environ.get("ATTACKER") else None
    groups = [Group("r1", 6 * GiB, 4 * GiB), Group("r2", 8 * GiB, 3 * GiB),
              Group("r3", 10 * GiB, 0), Group("r4", 12 * GiB, 0)]
    k = 0
    seen = {"ok": 0, "oom": 0, "refused under a guarantee": 0, "killed": 0}
    for g in groups:
        for _ in range(2):
            g.start(k)
            k += 1
    for step in range(steps):
        if attacker and step % 10 == 0:
            attacker.attack()
        g = rng.choice(groups)
        if not g.procs:
            g.start(k)
            k += 1
            continue
        p = rng.choice(g.procs)
        r = rng.random()
        if r < 0.72:
            mib = 64 * rng.randint(1, 24)
            before = g.use()
            res = p.alloc(mib)
            seen[res] = seen.get(res, 0) + 1
            if res == "oom":
                under = g.held and before + (mib << 20) <= g.guarantee
                seen["refused under a guarantee"] += under
                check(not under,
                      "step %d: %s refused %d MiB under its guarantee (%d MiB held of %d)"
                      % (step, p.name, mib, before >> 20, g.guarantee >> 20))
            elif res != "ok":
                check(False, "step %d: %s: %s" % (step, p.name, res))
        elif r < 0.9:
            p.free()
        elif r < 0.96:
            p.free_all()
        else:
            g.kill(p)
            seen["killed"] += 1
        for h in groups:
            check(h.use() <= h.limit, "step %d: group %s holds %d MiB past its limit"
                  % (step, h.name, h.use() >> 20))
        if memctl.bad:
            break
    for g in groups:
        for p in g.procs:
            p.end()
    seen["guarantees not admitted (the card full)"] = sum(g.refused for g in groups)
    if attacker:
        attacker.end()
        seen["attacked"] = True
    print("randomized: %d steps: %s" % (steps, seen))
    # The test means something only if the card was full at times.
    check(seen["oom"] > steps // 20, "the card was rarely full: %s" % seen)


def damaged():
    """The device book overwritten under live processes (its magic, by
    root, the only one who can): a borrow cannot be checked, so it is
    refused and said; a group within its own guarantee is not held up;
    nobody crashes."""
    g = member("dg", "dg", "8G", "2G")
    check(g.alloc(64) == "ok", "a guaranteed group starts")
    b = member("db", "db", "8G")
    check(b.alloc(64) == "ok", "a borrower starts")
    d = os.environ["VRAMCTL_DEVICE_DIR"]
    books = [f for f in os.listdir(d) if f.startswith("vramctl-dev-") and not
             f.endswith(".lock")]
    check(len(books) == 1, "one device book: %s" % books)
    with open(os.path.join(d, books[0]), "r+b") as f:
        magic = f.read(8)
        f.seek(0)
        f.write(b"garbage!")
    check(b.alloc(64) == "oom", "a borrow from a damaged book is refused")
    check("the device book cannot be read" in b.stderr(), "and said: %s" % b.stderr()[-400:])
    check(g.alloc(64) == "ok", "a group within its guarantee goes on")
    with open(os.path.join(d, books[0]), "r+b") as f:
        f.write(magic)  # root puts it right: what it holds is ended as usual
    for p in (g, b):
        check(p.end() == 0, "%s ends normally" % p.name)


def relative_dir():
    """A relative VRAMCTL_DEVICE_DIR (other books in every working
    directory) is not used: said, naming it; the cap holds; run refuses."""
    p = Prog("rel", {"VRAMCTL_GROUP": "rel", "VRAMCTL_LIMIT": "1G",
                     "VRAMCTL_GUARANTEE": "512M", "VRAMCTL_DEVICE_DIR": "devices"})
    check(p.alloc(64) == "ok" and p.alloc(1024) == "oom", "the cap holds")
    check("VRAMCTL_DEVICE_DIR is not an absolute path" in p.stderr(),
          "the library says why: %s" % p.stderr()[-400:])
    check(p.end() == 0, "it ends normally")
    r = subprocess.run([os.environ["V"], "run", "--limit", "1G", "--guarantee", "512M", "--",
                        "true"], capture_output=True, text=True,
                       env=dict(os.environ, VRAMCTL_DEVICE_DIR="devices"))
    check(r.returncode == 125 and "VRAMCTL_DEVICE_DIR is not an absolute path" in r.stderr,
          "run refuses it: %d %s" % (r.returncode, r.stderr))


scripted()
relative_dir()
if not memctl.bad:
    randomized(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
if not memctl.bad:
    damaged()
sys.exit(1 if memctl.bad else 0)
