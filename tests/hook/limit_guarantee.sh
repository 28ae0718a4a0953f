#!/usr/bin/env bash
# limit_guarantee.sh - `vramctl limit` and a running group's guarantee
# (#35, item 6), on a simulated 16 GiB card whose contexts take nothing:
#   1. a cap lowered below the group's guarantee lowers the guarantee with
#      it, said: ga2 (cap 4 GiB, guarantee 3 GiB, 600 MiB held) limited to
#      1 GiB holds 1 GiB guaranteed, and the 2 GiB it held from everyone
#      and could not use is lent again (gc, without a guarantee, borrows
#      it); its members see the new guarantee at once;
#   2. `limit --guarantee SPEC` changes a running guarantee: a raise that
#      fits is given; one that does not is refused with the numbers and
#      changes nothing (neither the guarantee nor the cap); a group that
#      holds no guarantee is told how one is given.
# As root, vramctl limit writes the device book itself; another user's
# asks the guard service (tests/cli/guard.sh runs one), the same call.
. "$VR_SRC/tests/hook/memctl.bash"
python3 - <<'PY' || fail "see above"
import json, os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import GiB, MiB, V, Prog, check


def limit(*args):
    r = subprocess.run([V, "limit", *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def man_example(cmd):
    """The lines vramctl-limit(1)'s EXAMPLES show after '$ vramctl limit CMD',
    its UUIDs as GPU-U."""
    man = open(os.path.join(os.environ["VR_SRC"], "man/vramctl-limit.1")).read()
    ex = man[man.index(".SH EXAMPLES"):].replace("\\-", "-").split("\n")
    i = ex.index("$ vramctl limit " + cmd)
    out = []
    for line in ex[i + 1:]:
        if line.startswith("$ ") or line.startswith("."):
            break
        out.append(re.sub(r"GPU-[0-9a-f.-]+", "GPU-U", line))
    return out


def as_man(out):
    return [re.sub(r"GPU-[0-9a-f.-]+", "GPU-U", l) for l in out.strip().split("\n")]


def group(name):
    st = json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True,
                                   check=True).stdout)
    return [g for g in st["groups"] if g["name"] == name][0]["devices"][0]


a = Prog("a", {"VRAMCTL_GROUP": "ga2", "VRAMCTL_LIMIT": "4G", "VRAMCTL_GUARANTEE": "3G"})
check(a.alloc(600) == "ok", "ga2 takes 600 MiB of its guarantee")
b = Prog("b", {"VRAMCTL_GROUP": "gb", "VRAMCTL_LIMIT": "16G", "VRAMCTL_GUARANTEE": "10G"})
check(b.alloc(100) == "ok", "gb takes 100 MiB of its guarantee")
c = Prog("c", {"VRAMCTL_GROUP": "gc", "VRAMCTL_LIMIT": "16G"})
# The card: 16 GiB, 700 MiB held; unused guarantees 2.4 + 9.9 GiB: 3 GiB lent.
check(c.alloc(4500) == "oom", "gc cannot borrow ga2's unused guarantee")

# 1. The cap below the guarantee.
rc, out = limit("ga2", "1G")
check(rc == 0, "limit ga2 1G: %d %s" % (rc, out))
check("cap 4 GiB -> 1 GiB" in out and "guarantee 3 GiB -> 1 GiB (lowered with the cap" in out,
      "the guarantee goes down with the cap, said: %s" % out)
check(man_example("ga2 1G") == as_man(out), "vramctl-limit(1)'s example is this run's: %s" % out)
g = group("ga2")
check(g["cap_bytes"] == 1 * GiB and g["guarantee_bytes"] == 1 * GiB,
      "status: cap and guarantee 1 GiB: %s" % g)
check(c.alloc(4500) == "ok", "what ga2 no longer holds from everyone is lent: %s" % c.stderr())
c.free()

# 2. --guarantee: a raise that fits, one that does not, a group without one.
rc, out = limit("--guarantee", "3G", "ga2", "4G")
check(rc == 0 and "cap 1 GiB -> 4 GiB" in out and "guarantee 1 GiB -> 3 GiB" in out,
      "a raise that fits is given: %d %s" % (rc, out))
check(man_example("--guarantee 3G ga2 4G") == as_man(out),
      "vramctl-limit(1)'s example is this run's: %s" % out)
check(group("ga2")["guarantee_bytes"] == 3 * GiB, "status: 3 GiB guaranteed again")
check(c.alloc(4500) == "oom", "and held from borrowers again")
rc, out = limit("--guarantee", "8G", "ga2", "12G")
check(rc == 125 and "does not fit on the device now: asked 8 GiB" in out and
      "other groups' unused guarantees are 9.9 GiB" in out and "nothing changed" in out,
      "a raise that does not fit is refused with the numbers: %d %s" % (rc, out))
g = group("ga2")
check(g["guarantee_bytes"] == 3 * GiB and g["cap_bytes"] == 4 * GiB,
      "nothing changed, the cap neither: %s" % g)
rc, out = limit("--guarantee", "2G", "gc")
check(rc == 125 and "holds no guarantee" in out and "vramctl run --guarantee" in out,
      "a group without a guarantee is told how one is given: %d %s" % (rc, out))
rc, out = limit("--guarantee", "1G", "gb")
check(rc == 0 and "guarantee 10 GiB -> 1 GiB" in out, "lowered alone: %d %s" % (rc, out))
check(c.alloc(4500) == "ok", "gb's lowered guarantee is lent at once")
for p in (a, b, c):
    check(p.end() == 0, "%s ends normally" % p.name)
sys.exit(1 if memctl.bad else 0)
PY
finish
