# kernel_files.sh - `vramctl kernel` on kernelspec files alone (no Jupyter
# needed): a wrapped kernel with an empty argv is refused rather than
# written as invalid JSON (#29); `kernel list` keeps its columns in line
# with long names (#25); two kernels in two groups show two names; a kernel vramctl installed whose program is gone
# (vramctl removed, `apt remove`) is named by doctor (#25).
. "$VR_SRC/tests/cli/common.bash"
export HOME=$TMPDIR/home JUPYTER_DATA_DIR=$TMPDIR/jupyter JUPYTER_PATH=$TMPDIR/jpath
mkdir -p "$HOME" "$JUPYTER_PATH/kernels/py" "$JUPYTER_PATH/kernels/empty"
printf '{"argv": ["/bin/true", "{connection_file}"], "display_name": "t"}\n' \
	>"$JUPYTER_PATH/kernels/py/kernel.json"
printf '{"argv": [ ], "display_name": "e"}\n' >"$JUPYTER_PATH/kernels/empty/kernel.json"

"$V" kernel install --limit 1G --from empty >out 2>err
expect_rc 125 $? "a wrapped kernel with an empty argv"
expect_grep "empty argv" err "the message says why"
[ ! -e "$JUPYTER_DATA_DIR/kernels/empty-gpu-1g" ] || fail "a kernelspec was written for an empty argv"

long=a-rather-long-kernel-name-past-24-columns
"$V" kernel install --limit 1G --from py >/dev/null 2>&1 || fail "install py"
"$V" kernel install --limit 2G --from py --name "$long" --group "$long-group" >/dev/null 2>&1 ||
	fail "install a long name"
"$V" kernel list >out 2>err
expect_rc 0 $? "kernel list"
python3 - out <<'PY' || fail "kernel list: columns out of line: $(cat out)"
import sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0]
starts = [head.index(c) for c in ("CAP", "GROUP", "WRAPS", "PATH")]
for l in lines[1:]:
    for s in starts:
        assert l[s - 1] == " " and l[s] != " ", (l, s)
PY

# Two kernels of one wrapped kernel and cap in two groups show two names
# (both showed "t (GPU, 2 GiB cap)") (#35, Low).
"$V" kernel install --limit 2G --from py --name twin >/dev/null 2>&1 || fail "install twin"
dn() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["display_name"])' "$1"; }
d1=$(dn "$JUPYTER_DATA_DIR/kernels/twin/kernel.json")
d2=$(dn "$JUPYTER_DATA_DIR/kernels/$long/kernel.json")
[ "$d1" = "t (GPU, 2 GiB cap, group jupyter-twin)" ] || fail "twin's display name: $d1"
[ "$d2" = "t (GPU, 2 GiB cap, group $long-group)" ] || fail "the long one's display name: $d2"
[ "$(dn "$JUPYTER_DATA_DIR/kernels/py-gpu-1g/kernel.json")" = "t (GPU, 1 GiB cap)" ] ||
	fail "the default display name changed: $(dn "$JUPYTER_DATA_DIR/kernels/py-gpu-1g/kernel.json")"
"$V" kernel remove twin >/dev/null 2>&1

# The kernel's program removed: doctor names the kernel and how to remove it.
spec=$JUPYTER_DATA_DIR/kernels/py-gpu-1g/kernel.json
python3 - "$spec" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))
k["argv"][0] = "/nonexistent/bin/vramctl"
json.dump(k, open(sys.argv[1], "w"))
PY
if sim_only; then
	"$V" doctor >out 2>err
	grep -E "^WARN +kernel.stale " out | grep -qF "py-gpu-1g" ||
		{ fail "doctor does not name the kernel whose program is gone:"; sed 's/^/      /' out >&2; }
	grep -qF "/nonexistent/bin/vramctl" out || fail "doctor does not name the missing program"
	grep -qF "vramctl kernel remove py-gpu-1g" out || fail "doctor does not say how to remove it"
	grep -E "kernel.stale" out | grep -qF "$long" && fail "doctor names a kernel whose program is there"
fi

# --guarantee (issue #26): carried into the kernel's `vramctl run` and its
# metadata; checked against the cap item by item, refused with 125.
"$V" kernel install --limit 4G --guarantee 1G --from py --name gua >out 2>err
expect_rc 0 $? "kernel install --guarantee"
python3 - "$JUPYTER_DATA_DIR/kernels/gua/kernel.json" <<'PY' || fail "--guarantee in the kernelspec"
import json, sys
k = json.load(open(sys.argv[1]))
assert k["argv"][1:7] == ["run", "--exec", "--limit", "4G", "--guarantee", "1G"], k["argv"]
assert k["metadata"]["vramctl"]["guarantee"] == "1G", k
PY
"$V" kernel install --limit 4G --guarantee 8G --from py --name gua2 >out 2>err
expect_rc 125 $? "a guarantee above the cap"
expect_grep "the guarantee 8G is above the cap there (4G)" err "a guarantee above the cap"
"$V" kernel install --limit 4G --guarantee 8Q --from py --name gua2 >out 2>err
expect_rc 125 $? "a bad guarantee"
expect_grep "unknown unit 'Q'" err "a bad guarantee"
[ ! -e "$JUPYTER_DATA_DIR/kernels/gua2" ] || fail "a refused guarantee wrote a kernelspec"

# --wait and --park-idle (#36): carried into the kernel's `vramctl run` and
# its metadata; a bad time refused with 125, nothing written.
"$V" kernel install --limit 4G --wait --park-idle=10m --from py --name idle >out 2>err
expect_rc 0 $? "kernel install --wait --park-idle"
python3 - "$JUPYTER_DATA_DIR/kernels/idle/kernel.json" <<'PY' || fail "--wait, --park-idle in the kernelspec"
import json, sys
k = json.load(open(sys.argv[1]))
assert k["argv"][1:7] == ["run", "--exec", "--limit", "4G", "--wait=60s", "--park-idle=10m"], k["argv"]
assert k["metadata"]["vramctl"]["wait"] == "60s" and k["metadata"]["vramctl"]["park_idle"] == "10m", k
PY
"$V" kernel install --limit 4G --park-idle=soon --from py --name idle2 >out 2>err
expect_rc 125 $? "a bad --park-idle"
expect_grep "bad time 'soon'" err "a bad --park-idle"
[ ! -e "$JUPYTER_DATA_DIR/kernels/idle2" ] || fail "a refused --park-idle wrote a kernelspec"
"$V" kernel remove py-gpu-1g --user >/dev/null 2>&1
"$V" kernel install --limit 1G --from py --user >out 2>err && "$V" kernel remove py-gpu-1g --user >out 2>err
expect_rc 0 $? "kernel remove still takes --user (its options after --wait and --park-idle)"
finish
