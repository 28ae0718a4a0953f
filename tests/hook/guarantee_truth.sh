#!/usr/bin/env bash
# guarantee_truth.sh - what a refusal for another group's guarantee does to
# the figures (#35, item 4), on a simulated 16 GiB card whose contexts take
# nothing (every figure exact): ga holds a guarantee of 10 GiB (100 MiB of
# it in use); gb (--limit 16G, no guarantee) holds 4 GiB, is shown what it
# can have (2 GiB: the card's 11.9 GiB free less ga's 9.9 GiB unused), and
# is refused 3.9 GiB. The refusal is counted (status's DENIED, the report)
# and never held: the group's and the process's PEAK stay 4 GiB, the
# report's right size holds 4 GiB, and the report says the guarantees
# refused it, not the cap (which was 16 GiB).
. "$VR_SRC/tests/hook/memctl.bash"
python3 - <<'PY' || fail "see above"
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import GiB, MiB, V, Prog, check
a = Prog("a", {"VRAMCTL_GROUP": "ga", "VRAMCTL_LIMIT": "12G", "VRAMCTL_GUARANTEE": "10G"})
check(a.alloc(100) == "ok", "ga takes 100 MiB of its guarantee")
b = Prog("b", {}, wrap=[V, "run", "--group", "gb", "--limit", "16G", "--report=r.json", "--"])
check(b.alloc(4096) == "ok", "gb takes 4 GiB (2 GiB past ga's guarantee is free)")
free, total = (int(x) for x in b.ask("i").split()[1:])
check(free == 2 * GiB - 100 * MiB + 100 * MiB,
      "cuMemGetInfo shows what gb can have (2 GiB), not the card's free: %d" % free)
check(total == 16 * GiB, "the total is the cap: %d" % total)
check(b.alloc(3994) == "oom", "3.9 GiB would take ga's unused guarantee: refused")
st = json.loads(subprocess.run([V, "status", "--json"], capture_output=True, text=True,
                               check=True).stdout)
gb = [g for g in st["groups"] if g["name"] == "gb"][0]["devices"][0]
check(gb["peak_bytes"] == 4 * GiB, "the group's PEAK: the refusal never held: %s" % gb)
pd = [p for p in st["processes"] if p.get("group") == "gb"][0]
check(pd["peak_bytes"] == 4 * GiB, "the process's PEAK: %s" % pd)
check(pd["denied_count"] == 1, "the refusal is counted in DENIED: %s" % pd)
check(b.end() == 0, "gb ends normally")
r = json.load(open("r.json"))["devices"][0]
check(r["card_peak_bytes"] in (None, 4 * GiB) and r["peak_bytes"] == 4 * GiB,
      "the report's peaks: %s" % r)
check(r["right_size_bytes"] == 4 * GiB, "the right size holds what was held: %s" % r)
check(r["denials"] == 1 and r["guarantee_denials"] == 1 and r["denied_need_bytes"] == 0,
      "the refusal is the guarantees', and asks no larger cap: %s" % r)
# The text report says so.
c = Prog("c", {}, wrap=[V, "run", "--group", "gc", "--limit", "16G", "--report", "--"])
check(c.alloc(4096) == "ok" and c.alloc(3994) == "oom", "gc: the same refusal")
check(c.end() == 0, "gc ends normally")
text = c.stderr()
check("1 request was refused for other groups' guarantees (the largest 3.9 GiB)" in text and
      "a larger cap would not grant it" in text and "the cap must be at least" not in text,
      "the text report names the guarantees, not the cap: %s" % text)
check("right size: --limit 0=4096M" in text, "the right size: %s" % text)
a.end()
sys.exit(1 if memctl.bad else 0)
PY
finish
