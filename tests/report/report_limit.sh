#!/usr/bin/env bash
# report_limit.sh - vramctl run --report when `vramctl limit` changes the
# run's cap while it runs (#26): the text and JSON reports list the changes
# made while the run ran (who, when, old, new), the cap shown is the one in
# force at the end, and a denial under the lowered cap is never explained
# against the raised one. Changes made to a named group before the run are
# not the run's. The program is tests/hook/memctl, driven line by line.
. "$VR_SRC/tests/report/lib.bash"
sim_only || { echo "skip: needs the simulator's device sizes"; exit 77; }
need_cap
export VRAMSIM_DEVICES=16G
export MEMCTL=$VR_BUILD/tests/hook/memctl
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
export V LIB

python3 - <<'PY' || fail "see the lines above"
import json, os, re, subprocess, sys, time
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import Prog, check

V = os.environ["V"]
MiB, GiB = 1 << 20, 1 << 30

def limit(*args):
    r = subprocess.run([V, "limit", *args], capture_output=True, text=True)
    check(r.returncode == 0, "vramctl limit %s: %d %s" % (args, r.returncode, r.stderr))

def Run(path, extra=()):
    """memctl under vramctl run --report=path (extra: more run options)."""
    return Prog(path, {}, wrap=[V, "run", "--limit", "1G", *extra, "--report=" + path, "--"])

def lowered_then_raised(path, last_ask=None):
    """1 GiB; 600 MiB held; lowered to 512 MiB (below use): 1 MiB more is
    refused (it needs 601 MiB); raised to 2 GiB: 1000 MiB more pass."""
    r = Run(path)
    check(r.ask("a 600") == "ok", "600 MiB under 1 GiB")
    limit(str(r.pid), "512M")
    check(r.ask("a 1") == "oom", "refused under the lowered cap")
    limit(str(r.pid), "2G")
    check(r.ask("a 1000") == "ok", "the raised cap is usable")
    if last_ask:
        check(r.ask(last_ask) == "oom", "refused above the raised cap")
    check(r.end() == 0, "the program exits 0")
    return r.pid

# 1. Text: the changes, the cap at the end, the denial against the lower cap.
lowered_then_raised("r.txt")
text = open("r.txt").read()
def has(s, what):
    check(s in text, "%s: '%s' not in the report:\n%s" % (what, s, text))
has("cap 2 GiB at the end (changed while it ran)", "the cap at the end, said changed")
has("1 request was refused (the largest 1 MiB); granting it needed 601 MiB, within the cap "
    "in force at the end (2 GiB): the cap was as low as 512 MiB while the run ran "
    "(vramctl limit: see the cap changes below)", "the denial under the lowered cap")
check("the cap must be at least" not in text,
      "no advice to raise a cap that was raised already:\n" + text)
has("cap changes while it ran (vramctl limit):\n", "the section")
lines = re.findall(r"^  (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC) GPU 0 (.*) -> (.*) by uid (\d+) "
                   r"\(pid (\d+)\)$", text, re.M)
check([(l[1], l[2], int(l[3])) for l in lines] ==
      [("1 GiB", "512 MiB", os.getuid()), ("512 MiB", "2 GiB", os.getuid())],
      "the two changes, in order: %s" % lines)

# 2. JSON: the same changes, with status --json's fields.
t_start = int(time.time())
lowered_then_raised("r.json")
t_end = int(time.time())
j = json.load(open("r.json"))
d = j["devices"][0]
check(d["cap_bytes"] == 2 * GiB and d["cap_changed"] is True and
      d["cap_lowest_bytes"] == 512 * MiB, "the device's caps: %s" % d)
check(d["denials"] == 1 and d["denied_need_bytes"] == 601 * MiB, "the denial: %s" % d)
ch = j["cap_changes"]
check(j["cap_changes_total"] == 2 and len(ch) == 2, "two changes: %s" % ch)
if len(ch) == 2:
    check([(c["old_cap_bytes"], c["new_cap_bytes"]) for c in ch] ==
          [(GiB, 512 * MiB), (512 * MiB, 2 * GiB)], "old and new caps: %s" % ch)
    for c in ch:
        check(c["uid"] == os.getuid() and c["pid"] > 0 and c["gpu_index"] == 0 and
              c["uuid"] == d["uuid"] and t_start <= c["time"] <= t_end,
              "who, where and when: %s" % c)
        check(sorted(c) == ["gpu_index", "new_cap_bytes", "old_cap_bytes", "pid", "time",
                            "uid", "uuid"], "the fields of status --json: %s" % sorted(c))

# 3. A denial above the raised cap too: the advice holds, and says the
# cap changed (2100 MiB needed, 2 GiB at the end, 512 MiB at the lowest).
lowered_then_raised("r3.txt", last_ask="a 500")
text = open("r3.txt").read()
has("2 requests were refused (the largest 500 MiB); to grant them too, the cap must be at "
    "least 2100 MiB (--limit 0=2100M); the cap changed while the run ran (as low as 512 MiB, "
    "2 GiB at the end)", "the advice above the raised cap")

# 4. A named group's changes before the run are not the run's: one made
# while another member held the group is left out, one made during the
# run is listed.
a = Prog("other", {"VRAMCTL_LIMIT": "1G", "VRAMCTL_GROUP": "rg"})
check(a.alloc(10) == "ok", "another member of the named group allocates")
limit("rg", "3G")
r = Run("r4.json", extra=("--group", "rg"))
check(r.ask("a 10") == "ok", "a member of the named group allocates")
limit("rg", "4G")
check(r.end() == 0, "the program exits 0")
a.end()
j = json.load(open("r4.json"))
ch = j["cap_changes"]
check(j["cap_changes_total"] == 1 and len(ch) == 1 and ch[0]["old_cap_bytes"] == 3 * GiB and
      ch[0]["new_cap_bytes"] == 4 * GiB, "only the run's change: %s" % ch)

# 5. No change: no section, an empty array.
r = Run("r5.txt")
check(r.ask("a 10") == "ok" and r.end() == 0, "a run without changes")
text = open("r5.txt").read()
check("cap changes" not in text and "changed while it ran" not in text,
      "nothing said of changes:\n" + text)

# 6. More changes than the books keep (16): the last 16, oldest first, and
# how many are missing.
for path in ("r6.txt", "r6.json"):
    r = Run(path)
    check(r.ask("a 10") == "ok", "a run with 18 changes")
    for k in range(18):
        limit(str(r.pid), "%dM" % (2000 + k))
    check(r.end() == 0, "the program exits 0")
j = json.load(open("r6.json"))
ch = j["cap_changes"]
check(j["cap_changes_total"] == 18 and len(ch) == 16, "18 made, 16 kept: %d %d" %
      (j["cap_changes_total"], len(ch)))
check([c["new_cap_bytes"] >> 20 for c in ch] == list(range(2002, 2018)),
      "the last 16, oldest first: %s" % [c["new_cap_bytes"] >> 20 for c in ch])
text = open("r6.txt").read()
has("cap changes while it ran (vramctl limit):\n  (2 earlier not kept: the group keeps its "
    "last 16)\n", "the changes not kept")
check(len(re.findall(r"^  \d{4}-.* GPU 0 .* -> .* by uid", text, re.M)) == 16,
      "16 change lines:\n" + text)
sys.exit(1 if memctl.bad else 0)
PY
finish
