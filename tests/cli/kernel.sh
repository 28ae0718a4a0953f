# vramctl kernel install/list/remove with Debian's python3-jupyter-client and
# python3-ipykernel: kernels started through jupyter_client's KernelManager
# see the cap and share one group (tests/cli/kernel_jupyter.py); the wrapped
# kernel is never touched; remove takes it out of `jupyter kernelspec list`.
. "$VR_SRC/tests/cli/common.bash"
PY=/usr/bin/python3
if ! "$PY" -c 'import jupyter_client, ipykernel' 2>/dev/null; then
	echo "skip: python3-jupyter-client and python3-ipykernel are not installed"
	exit 77
fi
sim_only || { echo "skip: needs the simulated GPU's sizes"; exit 77; }
has_cap || { echo "skip: the library cannot be preloaded in this build"; exit 77; }
# The TSan-built library's runtime crashes an uninstrumented Python's ZeroMQ
# threads (a kernel's sockets); the hook's own tests cover that build.
if ! LD_PRELOAD=$LIB "$PY" -c 'import zmq; zmq.Context().socket(zmq.REP).bind("tcp://127.0.0.1:*")' \
	>/dev/null 2>&1; then
	echo "skip: this build's library crashes pyzmq when preloaded (sanitizer runtime)"
	exit 77
fi
export HOME=$TMPDIR/home JUPYTER_DATA_DIR=$TMPDIR/jupyter JUPYTER_RUNTIME_DIR=$TMPDIR/runtime
export JUPYTER_PATH=$TMPDIR/jpath PYDEVD_DISABLE_FILE_VALIDATION=1 VRAMSIM_DEVICES=16G
mkdir -p "$HOME" "$JUPYTER_PATH/kernels/py"
# The kernel to wrap, in JUPYTER_PATH (found as Jupyter finds it).
cat >"$JUPYTER_PATH/kernels/py/kernel.json" <<JSON
{"argv": ["$PY", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
 "display_name": "Python (test)", "language": "python",
 "env": {"KEEP": "\${NOT_EXPANDED}"}, "metadata": {"debugger": false}}
JSON
before=$(cat "$JUPYTER_PATH/kernels/py/kernel.json")
speclist() { "$PY" -m jupyter_client.kernelspecapp list 2>/dev/null; }

"$V" kernel install --limit 1G --from py >out 2>err
expect_rc 0 $? "kernel install"
spec=$JUPYTER_DATA_DIR/kernels/py-gpu-1g/kernel.json
[ -f "$spec" ] || fail "no kernelspec at $spec: $(cat out err)"
"$PY" - "$spec" <<'PY' || fail "the kernelspec's content"
import json, sys
k = json.load(open(sys.argv[1]))
a = k["argv"]
assert a[1:8] == ["run", "--exec", "--limit", "1G", "--group", "jupyter-py-gpu-1g", "--"], a
assert a[8:] == ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"], a
assert k["display_name"] == "Python (test) (GPU, 1 GiB cap)", k
assert k["env"] == {"KEEP": "${NOT_EXPANDED}"}, k["env"]
assert k["metadata"]["vramctl"]["group"] == "jupyter-py-gpu-1g", k
assert k["metadata"]["debugger"] is False, k
PY
speclist | grep -q 'py-gpu-1g' || fail "jupyter kernelspec list does not show it: $(speclist)"
"$V" kernel list >out
expect_grep "jupyter-py-gpu-1g" out "kernel list"

"$PY" "$VR_SRC/tests/cli/kernel_jupyter.py" py-gpu-1g $((1 << 30)) >out 2>&1 ||
	fail "kernels under the cap: $(grep -v Debugger out | tail -n 20)"

# Installing again replaces our own spec; a foreign one is left alone.
"$V" kernel install --limit 2G --from py --name py-gpu-1g >/dev/null 2>&1
expect_rc 0 $? "reinstalling our own kernel"
"$V" kernel install --limit 2G --name py >/dev/null 2>err
expect_rc 125 $? "a name that is not ours"
"$V" kernel remove py 2>err
expect_rc 125 $? "removing a kernel vramctl did not install"
expect_grep "not a kernel vramctl installed" err "remove refuses"
[ "$(cat "$JUPYTER_PATH/kernels/py/kernel.json")" = "$before" ] || fail "the wrapped kernel changed"

"$V" kernel remove py-gpu-1g >out
expect_rc 0 $? "kernel remove"
[ ! -e "$JUPYTER_DATA_DIR/kernels/py-gpu-1g" ] || fail "the kernel folder is still there"
speclist | grep -q 'py-gpu-1g' && fail "still in jupyter kernelspec list"
"$V" kernel list | grep -q py-gpu-1g && fail "still in vramctl kernel list"
[ -f "$JUPYTER_PATH/kernels/py/kernel.json" ] || fail "the wrapped kernel was removed"

# --sys-prefix: the environment's prefix (VIRTUAL_ENV), found there by list
# and removed from there.
VIRTUAL_ENV=$TMPDIR/venv "$V" kernel install --limit 2G --from py --sys-prefix --group team >out
expect_rc 0 $? "kernel install --sys-prefix"
[ -f "$TMPDIR/venv/share/jupyter/kernels/py-gpu-2g/kernel.json" ] ||
	fail "--sys-prefix did not write under VIRTUAL_ENV: $(cat out)"
VIRTUAL_ENV=$TMPDIR/venv "$V" kernel list >out
expect_grep "team" out "kernel list finds the --sys-prefix kernel and its group"
VIRTUAL_ENV=$TMPDIR/venv "$V" kernel remove py-gpu-2g --sys-prefix >/dev/null
expect_rc 0 $? "kernel remove --sys-prefix"
[ ! -e "$TMPDIR/venv/share/jupyter/kernels/py-gpu-2g" ] || fail "--sys-prefix kernel not removed"

# --exec needs a named group.
"$V" run --exec --limit 1G -- true 2>err
expect_rc 125 $? "--exec without --group"
# --exec replaces vramctl, which writes reports and traces: refused, not ignored.
"$V" run --exec --group g --limit 1G --report -- true 2>err
expect_rc 125 $? "--exec with --report"
expect_grep "cannot be used with --report" err "--exec with --report is explained"
finish
