#!/usr/bin/env bash
# hints.sh - the denial line names the real reason at the default log
# level (#35): a request larger than the cap is told so (not --growth,
# which cannot help it); in a fail-closed state (a cap that cannot be read)
# no size of cap is blamed; after `vramctl limit` lowered the cap below
# what the group held, the change is said at once and the denial names it
# (not the context, not --growth). Denials the rate limit held back are
# counted at exit.
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver's figures"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
unset VRAMCTL_COUNT VRAMCTL_LOG # as users run it
export VRAMSIM_DEVICES=16G MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
P=$VR_BUILD/tests/report/memprog

# A preallocation of 600 MiB, then 2 GiB under 1 GiB.
"$V" run --limit 1G -- "$P" keep 600 deny 2000 2>err
expect_rc 0 $? "2 GiB under 1 GiB"
expect_grep "hint: the request alone is more than the cap; granting it needs a cap of at least 2664 MiB" \
	err "the request alone"
grep -q -- "--growth" err && fail "--growth cannot grant a request larger than the cap: $(cat err)"
# A preallocation, then a request the cap could hold: --growth is the tip.
"$V" run --limit 1G -- "$P" keep 600 deny 400 2>err
expect_grep "vramctl run --growth lets it grow on demand" err "a preallocation's hint"

# Denials held back by the rate limit (5 lines a second) are counted when
# the program exits before another line gets through: shown + held back is
# every denial.
"$V" run --limit 1G -- "$P" keep 900 deny 200 deny 200 deny 200 deny 200 deny 200 deny 200 \
	deny 200 deny 200 2>err
expect_rc 0 $? "eight denials"
shown=$(grep -c "vramctl: denied 200 MiB" err)
held=$(sed -n 's/^vramctl: \([0-9]*\) more denials\{0,1\} not shown.*/\1/p' err)
[ $((shown + ${held:-0})) = 8 ] || fail "denials shown ($shown) and held back (${held:-none}): $(cat err)"

# Fail closed: no size of cap is blamed.
VRAMCTL_LIMIT=0=1G,0=2G LD_PRELOAD=$LIB "$P" deny 10 2>err
expect_grep "the cap could not be read" err "fail closed: the reason"
grep -E "cap 0 B|needs a cap of at least" err && fail "fail closed blamed on the cap's size: $(cat err)"

# The cap lowered below what the group holds.
python3 - <<'PY' || fail "see above"
import os, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["VR_SRC"], "tests/hook"))
import memctl
from memctl import Prog, check
a = Prog("a", {"VRAMCTL_GROUP": "gl", "VRAMCTL_LIMIT": "1G"})
check(a.alloc(900) == "ok", "900 MiB under 1 GiB")
r = subprocess.run([os.environ["V"], "limit", "gl", "500M"], capture_output=True, text=True)
check(r.returncode == 0, "limit gl 500M: %s" % r.stderr)
check(a.alloc(10) == "oom", "over the new cap: refused")
err = a.stderr()
check("the group's cap was changed from 1 GiB to 500 MiB (vramctl limit)" in err,
      "the change, said at the default level: %s" % err)
check("over its cap (500 MiB), which vramctl limit lowered from 1 GiB while it ran" in err,
      "over the cap, and why: %s" % err)
check("hint: vramctl limit lowered the group's cap from 1 GiB to 500 MiB while it ran" in err,
      "the denial's hint names the change: %s" % err)
check("--growth" not in err and "contexts, modules and the driver's own use take" not in err,
      "neither the preallocation nor the context is blamed: %s" % err)
check(a.end() == 0, "ends normally")
sys.exit(1 if memctl.bad else 0)
PY
finish
