#!/usr/bin/env bash
# limit.sh - `vramctl limit` changes a running program's cap (#26): the
# program sees the new total at once, up and down; lowered below what it
# holds, its new allocations are refused until it has freed enough, and it
# is not killed; the change is recorded (status --json); another user is
# refused; the site's maximum holds; with the cap counting the card, the
# card is checked against the new cap at once, up and down (#37). Programs are tests/hook/memctl,
# driven line by line.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (memory figures exact)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=16G
export MEMCTL=$VR_BUILD/tests/hook/memctl
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
nobody_ok=0
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$V" --version >/dev/null 2>&1; then
	nobody_ok=1
fi
export NOBODY_OK=$nobody_ok V LIB

python3 - <<'PY' || fail "see the lines above"
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import Prog, check

V, LIB, MEMCTL = os.environ["V"], os.environ["LIB"], os.environ["MEMCTL"]
MiB, GiB = 1 << 20, 1 << 30
def limit(*args, env=None):
    r = subprocess.run([V, "limit", *args], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    return r.returncode, r.stdout + r.stderr

# 1. Up and down, by group and by PID: the program's total follows.
a = Prog("lg", {"VRAMCTL_LIMIT": "1G", "VRAMCTL_GROUP": "lg"})
check(a.total() == GiB, "the program starts with its cap as total")
rc, out = limit("lg", "2G")
check(rc == 0 and "cap 1 GiB -> 2 GiB" in out, "raise by group: %d %s" % (rc, out))
check(a.total() == 2 * GiB, "the program sees the raised cap")
check(a.ask("a 1500") == "ok", "the raised cap is usable at once")
check(a.ask("f") == "ok", "free")
rc, out = limit(str(a.pid), "768M")
check(rc == 0 and "cap 2 GiB -> 768 MiB" in out, "lower by PID: %d %s" % (rc, out))
check(a.total() == 768 * MiB, "the program sees the lowered cap")

# 2. Lowered below what it holds: refused until under, not killed.
check(a.alloc(600) == "ok", "600 MiB under 768 MiB")
rc, out = limit("lg", "256M")
check(rc == 0 and "over the new cap" in out, "lowering below use is said: %s" % out)
# vramctl-limit(1) quotes such a line with other figures: the same form.
import re
def form(l):
    l = re.sub(r"GPU-[0-9a-f.-]+", "GPU-U", l.replace("\\-", "-"))
    l = re.sub(r"[0-9]+(\.[0-9]+)? (B|KiB|MiB|GiB|TiB)", "SIZE", l)
    return re.sub(r"^group [^:]+:", "group G:", l)
man = open(os.path.join(os.environ["VR_SRC"], "man/vramctl-limit.1")).read().split("\n")
quoted = [form(l) for l in man if "over the new cap" in l and l.startswith("group ")]
check(quoted and all(q == form(out.strip()) for q in quoted),
      "vramctl-limit(1)'s over-cap line has this run's form: %s / %s" % (quoted, out))
check(a.ask("a 1") == "oom", "over the new cap: a new allocation is refused")
check(a.alive(), "the program is not killed")
check(a.ask("f") == "ok", "it frees")
check(a.ask("a 200") == "ok", "under the new cap again: allocations pass")
check(a.ask("a 100") == "oom", "and the new cap holds")

# 3. The changes are recorded: who, old, new.
st = json.loads(subprocess.run([V, "status", "--json"], capture_output=True,
                               text=True).stdout or "{}")
groups = [g for g in st.get("groups", []) if g.get("name") == "lg"]
ch = groups[0].get("cap_changes", []) if groups else []
check(len(ch) == 3, "status --json records 3 changes: %s" % ch)
if len(ch) == 3:
    check(ch[0].get("old_cap_bytes") == GiB and ch[0].get("new_cap_bytes") == 2 * GiB,
          "the first change: %s" % ch[0])
    check(ch[2].get("new_cap_bytes") == 256 * MiB and ch[2].get("uid") == os.getuid(),
          "the last change, and who made it: %s" % ch[2])

# 4. The site's maximum holds.
with open("site.conf", "w") as f:
    f.write("max_limit = 1G\n")
rc, out = limit("lg", "4G", env={"VRAMCTL_CONFIG": os.path.abspath("site.conf")})
check(rc == 125 and "above the site's maximum" in out, "max_limit: %d %s" % (rc, out))
check(a.total() == 256 * MiB, "a refused change changes nothing")
# A maximum that is a share of the card, for a card this shell does not see
# (CUDA_VISIBLE_DEVICES hides it): its size is unknown here, so is the
# maximum; said so, never "above the site's maximum, 0 B".
with open("share.conf", "w") as f:
    f.write("max_limit = 50%\n")
rc, out = limit("lg", "4G", env={"VRAMCTL_CONFIG": os.path.abspath("share.conf"),
                                 "CUDA_VISIBLE_DEVICES": ""})
check(rc == 125 and "is not visible here (CUDA_VISIBLE_DEVICES)" in out and "0 B" not in out,
      "a share for a hidden card: %d %s" % (rc, out))
check(a.total() == 256 * MiB, "a refused change changes nothing")
rc, out = limit("lg", "4G", env={"VRAMCTL_CONFIG": os.path.abspath("share.conf")})
check(rc == 0 and "cap 256 MiB -> 4 GiB" in out, "a share for a visible card: %d %s" % (rc, out))
check(a.total() == 4 * GiB, "the cap within the share")
rc, out = limit("lg", "256M")
check(rc == 0, "back to 256 MiB: %d %s" % (rc, out))

# 5. Another user is refused.
if os.environ["NOBODY_OK"] == "1":
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        V, "limit", "--registry-dir", os.environ["VRAMCTL_REGISTRY_DIR"],
                        "lg", "4G"], capture_output=True, text=True)
    check(r.returncode == 125 and "only its owner or root" in r.stderr,
          "another user: %d %s" % (r.returncode, r.stderr))
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        V, "limit", str(a.pid), "4G"], capture_output=True, text=True)
    check(r.returncode == 125 and "only its owner or root" in r.stderr,
          "another user's process: %d %s" % (r.returncode, r.stderr))
    check(a.total() == 256 * MiB, "nothing changed")
else:
    print("note: no setpriv or nobody cannot run vramctl here: another user not checked")

# 6. Wrong targets: one line each, exit 125.
rc, out = limit("nosuchgroup", "1G")
check(rc == 125 and "no group 'nosuchgroup'" in out, "a missing group: %d %s" % (rc, out))
rc, out = limit(str(os.getpid()), "1G")
check(rc == 125 and "not capped by vramctl" in out, "an uncapped PID: %d %s" % (rc, out))
rc, out = limit("lg", "lots")
check(rc == 125, "a bad spec: %d %s" % (rc, out))

# 7. With the cap counting the card (#37): a raise is right at once, for
# the first allocation past the old cap, with no line about the old cap;
# a lowered cap is what the card is checked against at once, for a program
# whose books hold less than the card (pages the driver keeps after its
# blocks of 1 MiB were freed): refused and said, not granted silently.
c = Prog("lc", {"VRAMCTL_LIMIT": "1G", "VRAMCTL_GROUP": "lc", "VRAMCTL_COUNT": "card"})
check(c.alloc(836) == "ok", "card: 836 MiB and the context under 1 GiB")
rc, out = limit("lc", "3G")
check(rc == 0, "card: raise: %d %s" % (rc, out))
check(c.alloc(500) == "ok", "card: the first allocation past the old cap is granted")
err = c.stderr()
check("over its cap (1 GiB)" not in err and "needs a cap of at least" not in err,
      "card: no line of the old cap: %s" % err)
check(c.free() == "ok", "card: free the 500 MiB")
for i in range(200):
    check(c.alloc(1) == "ok", "card: 1 MiB block %d" % i)
for i in range(150):
    check(c.free() == "ok", "card: free 1 MiB block %d" % i)
rc, out = limit("lc", "1G")
check(rc == 0, "card: lower: %d %s" % (rc, out))
check(c.alloc(50) == "oom", "card: 50 MiB more past the lowered cap on the card is refused")
check("denied 50 MiB on GPU 0: cap 1 GiB" in c.stderr(), "card: the refusal is said: %s" % c.stderr())
check(c.end() == 0, "card: the program ends normally")

check(a.end() == 0, "the program ends normally")
rc, out = limit("lg", "1G")
check(rc == 125 and ("no live member" in out or "no group" in out),
      "a group whose program ended: %d %s" % (rc, out))
sys.exit(1 if memctl.bad else 0)
PY
finish
