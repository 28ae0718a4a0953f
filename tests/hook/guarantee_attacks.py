"""guarantee_attacks.py - the checks of guarantee_attacks.sh (read it first)."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memctl  # noqa: E402
from memctl import check  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20
W, B = os.environ["W"], os.environ["B"]
V, MEMCTL = os.path.join(B, "vramctl"), os.path.join(B, "memctl")
VICTIM, ATTACKER = os.environ["VICTIM"], os.environ["ATTACKER"]
BOOK_SIZE, BOARD_BASE = 4096 + 64 * 320, 1 << 40
# A bound no honest answer comes near on this card: before #38 a lock held
# on the book made each allocation wait 2 s.
PROMPT = 1.0
PASS = ("PATH", "LD_LIBRARY_PATH", "VRAMSIM_DEVICES", "VRAMSIM_CONTEXT_BYTES",
        "VRAMSIM_STATE_DIR", "VRAMCTL_DEVICE_DIR", "VRAMCTL_GUARD_SOCKET", "ASAN_OPTIONS",
        "UBSAN_OPTIONS", "LSAN_OPTIONS")


class Proc(memctl.Prog):
    """A program driven line by line (memctl, attacker.py), as user (None:
    root, this test's own); memctl.Prog's questions, each one timed."""

    def __init__(self, name, user, argv, env=None):  # pylint: disable=super-init-not-called
        e = {k: os.environ[k] for k in PASS if k in os.environ}
        e["VRAMCTL_COUNT"] = "allocations"
        e.update(env or {})
        cmd = argv if user is None else \
            ["runuser", "-u", user, "--", "env", "-i"] + ["%s=%s" % kv for kv in e.items()] + argv
        self.name = name
        self.err = os.path.join(W, "err-" + name)
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.err, "a"), text=True, cwd=W,
                                  env=e if user is None else None)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError("%s did not start: %s %s" % (name, line, self.stderr()))
        self.pid = int(line[1])
        self.blocks = []
        self.took = 0.0

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def answer(self):
        return self.p.stdout.readline().strip()

    def ask(self, cmd):
        t = time.monotonic()
        r = super().ask(cmd)
        self.took = time.monotonic() - t
        return r


def guaranteed(name, limit="8G", guarantee="4G"):
    """The victim's group, its guarantee given by root's guard service."""
    reg = os.path.join(W, "reg-victim")
    return Proc(name, VICTIM, [V, "run", "--group", name, "--limit", limit, "--guarantee",
                               guarantee, "--", MEMCTL], {"VRAMCTL_REGISTRY_DIR": reg})


def third(name, limit="8G", **env):
    """Root's process, capped, without a guarantee: a borrower."""
    e = {"LD_PRELOAD": os.path.join(B, "libvramctl.so"), "VRAMCTL_GROUP": name,
         "VRAMCTL_LIMIT": limit, "VRAMCTL_REGISTRY_DIR": os.path.join(W, "reg-root")}
    e.update(env)
    return Proc(name, None, [MEMCTL], e)


def prompt(p, what):
    check(p.took < PROMPT, "%s answered in %.2f s: it waited" % (what, p.took))


def uuid_hex():
    j = json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True,
                                  check=True).stdout)
    return j["devices"][0]["uuid"][4:].replace("-", "")


BOOK = os.path.join(os.environ["VRAMCTL_DEVICE_DIR"], "vramctl-dev-" + uuid_hex())


def door_created_first(a):
    """Before any book exists: the attacker cannot make one (the directory
    is root's). A directory anyone can write (a misconfiguration) is not
    used at all: said once, naming it; the cap holds; a guarantee there is
    refused, by the library and by root's run. A book the attacker made
    (forged capacity, 0644 or 0600, read-locked) that root moved into a
    directory of root's is not used either (said once, naming the file and
    its owner), and root's run replaces it with its own, without waiting
    for the attacker's locks."""
    check(not os.path.exists(BOOK), "no book before the first process: %s" % BOOK)
    r = a.ask("create " + BOOK)
    check(r == "err EACCES", "the attacker made the book first: %s" % r)
    shared = os.path.join(W, "shared")
    t = third("shared-dir", "2G", VRAMCTL_DEVICE_DIR=shared, VRAMCTL_GUARANTEE="1G")
    check(t.alloc(1536) == "ok" and t.alloc(1024) == "oom", "the cap holds")
    err = t.stderr()
    check(err.count("is not used") == 1 and shared in err and "writable by users other" in err,
          "said once, naming the directory and why: %s" % err)
    check(t.end() == 0, "it ends normally")
    r = subprocess.run([V, "run", "--limit", "4G", "--guarantee", "1G", "--", "true"],
                       capture_output=True, text=True,
                       env=dict(os.environ, VRAMCTL_DEVICE_DIR=shared))
    check(r.returncode == 125 and "writable by users other than root" in r.stderr,
          "root's run refuses a directory anyone writes: %d %s" % (r.returncode, r.stderr))
    roots = os.path.join(W, "roots")
    os.mkdir(roots, 0o755)
    moved = os.path.join(roots, os.path.basename(BOOK))
    for mode in ("644", "600"):
        forged = os.path.join(shared, os.path.basename(BOOK))
        r = a.ask("forge %s %s %d %s" % (forged, uuid_hex(), 1 << 40, mode))
        check(r == "ok", "the attacker forges a book: %s" % r)
        os.rename(forged, moved)
        check(a.ask("lock %s 0 0" % moved) in ("ok", "err EACCES"), "and locks it")
        t = third("forged-" + mode, "2G", VRAMCTL_DEVICE_DIR=roots, VRAMCTL_GUARANTEE="1G")
        check(t.alloc(1536) == "ok" and t.alloc(1024) == "oom", "the cap holds")
        err = t.stderr()
        check(err.count("is not used") == 1 and moved in err and "not owned by root" in err,
              "said once, naming the file and why: %s" % err)
        check("cannot be given" in err, "a guarantee there is refused: %s" % err)
        check(t.end() == 0, "it ends normally")
        start = time.monotonic()
        r = subprocess.run([V, "run", "--limit", "4G", "--guarantee", "1G", "--", "true"],
                           capture_output=True, text=True,
                           env=dict(os.environ, VRAMCTL_DEVICE_DIR=roots))
        took = time.monotonic() - start
        check(r.returncode == 0 and os.stat(moved).st_uid == 0,
              "root's run replaces it with its own: %d %s" % (r.returncode, r.stderr))
        check(took < 2 * PROMPT, "without waiting for the attacker's locks: %.2f s" % took)
        with open(moved, "rb") as f:
            cap = int.from_bytes(f.read(56)[48:56], "little")
        check(cap == 16 * GiB, "the capacity is the card's, not the forged one: %d" % cap)
        os.unlink(moved)


def book_is_roots(a):
    """The book root made: 0644, root's, the card's capacity; the attacker
    cannot open it for writing, map it writable, rewrite the capacity or
    remove it (the door removed by its owner, before #38)."""
    st = os.stat(BOOK)
    check(st.st_uid == 0 and st.st_mode & 0o7777 == 0o644, "the book: %o" % st.st_mode)
    with open(BOOK, "rb") as f:
        cap = int.from_bytes(f.read(56)[48:56], "little")
    check(cap == 16 * GiB, "the capacity is the card's usable size: %d" % cap)
    for cmd in ("open-rw " + BOOK, "write %s 48 0000000000010000" % BOOK, "mmap-rw " + BOOK,
                "rm " + BOOK, "wlock %s 1 1" % BOOK):
        r = a.ask(cmd)
        check(r.startswith("err E"), "the attacker: %s: %s" % (cmd, r))
    with open(BOOK, "rb") as f:
        check(int.from_bytes(f.read(56)[48:56], "little") == 16 * GiB, "capacity rewritten")


def locks_held(a, g):
    """Read locks on any byte of the book (the old door's maker byte, its
    lock byte, its line bytes, the whole of it, the board's first byte),
    held while a third party starts and borrows: it sees g's guarantee,
    waits for nothing and takes what is not guaranteed."""
    for start, length in ((0, 1), (1, 1), (4096, 1024), (0, BOOK_SIZE), (BOARD_BASE, 1)):
        r = a.ask("lock %s %d %d" % (BOOK, start, length))
        check(r == "ok", "lock %d+%d: %s" % (start, length, r))
    t = third("t-locks")
    check(t.alloc(100) == "ok", "a third party's 100 MiB on an empty card: %s" % t.stderr())
    prompt(t, "its allocation")
    # 16 GiB, g holds 1 of its 4: 3 guaranteed to g, the rest anyone's.
    check(t.alloc(8 * 1024 - 100) == "ok", "t borrows up to its cap")
    prompt(t, "a borrow")
    check(t.alloc(64) == "oom", "t never passes its cap")
    check(g.alloc(3 * 1024) == "ok", "g reaches its whole guarantee: %s" % g.stderr())
    check("unchecked" not in t.stderr(), "nobody borrows unchecked: %s" % t.stderr())
    t.free_all()
    g.free_all()
    check(g.alloc(1024) == "ok", "g again")
    return t


def board_locked(a, g, t):
    """A lock over the whole board (the most a neighbour can do): borrowing
    is refused at once, and said; g within its guarantee goes on."""
    r = a.ask("lock %s %d 0" % (BOOK, BOARD_BASE))
    check(r == "ok", "the attacker locks the board: %s" % r)
    check(t.alloc(100) == "oom", "a borrow that cannot be checked is refused")
    prompt(t, "a refused borrow")
    check("borrows in flight cannot be counted" in t.stderr(), "said: %s" % t.stderr()[-300:])
    check(g.alloc(3 * 1024) == "ok", "g within its guarantee: %s" % g.stderr())
    g.free_all()


def slow_nvml(g):
    """A borrower whose NVML call takes 3 s: nobody else waits for it."""
    b1 = third("b-slow-nvml", VRAMSIM_SLOW="nvmlDeviceGetMemoryInfo:3000000")
    b1.send("a 100")
    time.sleep(0.2)
    t = third("t-nvml")
    check(t.alloc(100) == "ok", "a borrow beside a slow one: %s" % t.stderr())
    prompt(t, "a borrow beside a 3 s NVML call")
    check(g.alloc(4 * 1024) == "ok", "g reaches its guarantee: %s" % g.stderr())
    check(b1.answer() in ("ok", "oom"), "the slow one answers")
    for p in (b1, t):
        check(p.end() == 0, "%s ends normally" % p.name)
    g.free_all()


def slow_driver(g):
    """Two borrowers of 7 GiB 250 ms apart on a 16 GiB card where g holds
    a 4 GiB guarantee, the first one's cuMemAlloc taking 400 ms: the
    second sees the first's pending bytes and is refused; g gets its 4."""
    b1 = third("b-slow-alloc", VRAMSIM_SLOW="cuMemAlloc_v2:400000")
    b2 = third("b-second")
    b1.send("a %d" % (7 * 1024))
    time.sleep(0.25)
    r2 = b2.alloc(7 * 1024)
    check(b1.answer() == "ok", "the first borrow is placed")
    check(r2 == "oom", "the second borrow, while the first is in flight, is refused: %s" % r2)
    check(g.alloc(4 * 1024) == "ok", "g reaches its whole guarantee: %s" % g.stderr())
    for p in (b1, b2):
        check(p.end() == 0, "%s ends normally" % p.name)
    g.free_all()


def scenario(name, fn):
    """Each attack on its own, so that one that goes wrong does not hide the
    others; $ATTACKS (comma-separated names) picks some."""
    only = os.environ.get("ATTACKS")
    if only and name not in only.split(","):
        return
    before = memctl.bad
    try:
        fn()
    except Exception as e:  # a program that did not start, an answer missing
        check(False, "%s: %r" % (name, e))
    print("%s: %s" % (name, "ok" if memctl.bad == before else "FAILED"), flush=True)


def attacker():
    return Proc("attacker", ATTACKER, ["python3", os.path.join(B, "attacker.py")])


def with_group(fn):
    """fn(a, g) with a fresh attacker and the victim's guaranteed group g
    (holding 1 GiB of its 4), both ended after."""
    def run():
        a = attacker()
        g = guaranteed("gv")
        check(g.alloc(1024) == "ok", "the victim's group starts: %s" % g.stderr())
        try:
            fn(a, g)
        finally:
            check(g.end() == 0, "g ends normally")
            a.end()
    return run


def locks_and_board(a, g):
    t = locks_held(a, g)
    board_locked(a, g, t)
    check(t.end() == 0, "t ends normally")


def slow(fn):
    def run(a, g):
        a.ask("lock %s 0 %d" % (BOOK, BOOK_SIZE))
        g.free_all()
        fn(g)
    return run


scenario("door created first", lambda: door_created_first(attacker()))
scenario("the book is root's", with_group(lambda a, g: book_is_roots(a)))
scenario("locks held", with_group(locks_and_board))
scenario("a 3 s NVML call", with_group(slow(slow_nvml)))
scenario("a 400 ms cuMemAlloc", with_group(slow(slow_driver)))
sys.exit(1 if memctl.bad else 0)
