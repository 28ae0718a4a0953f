#!/usr/bin/env bash
# tests/cdi/spec.sh - `vramctl cdi generate` without a container runtime:
# every spec it writes (JSON and YAML, each naming scheme, with and without
# --group) validates against the CDI JSON schema vendored in
# tests/cdi/schema (v0.5.4 and v1.1.0), with Debian's python3-jsonschema;
# cdiVersion is the lowest that holds the spec; JSON and YAML say the same;
# --output replaces the file whole. Every bad argument: exit 125 and one
# message naming it, nothing written.
. "$VR_SRC/tests/cli/common.bash"
PY=/usr/bin/python3
"$PY" -c 'import jsonschema, yaml' 2>/dev/null ||
	{ echo "skipped: needs Debian's python3-jsonschema and python3-yaml (scripts/install-deps)"; exit 77; }
S=$VR_SRC/tests/cdi/schema
books=$TMPDIR/books

gen() { # gen FILE ARGS...: generate into FILE from standard output
	local f=$1
	shift
	"$V" cdi generate --books "$books" "$@" >"$f" 2>"$TMPDIR/err"
	expect_rc 0 $? "cdi generate $*"
}
version_of() { "$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["cdiVersion"])' "$1"; }

gen "$TMPDIR/a.json" --limit 4G
gen "$TMPDIR/a.yaml" --limit 4G --format yaml
gen "$TMPDIR/b.json" --limit 0=4G,1=50% --group train
gen "$TMPDIR/c.yaml" --limit 1536M --limit 1=2G --name small --format yaml
gen "$TMPDIR/d.json" --limit GPU-0e0e0e0e-1111-2222-3333-444444444444=1G
gen "$TMPDIR/e.json" --limit 2G --growth
gen "$TMPDIR/f.json" --limit 8G --guarantee 0=2G --guarantee 1G --group g --growth
gen "$TMPDIR/g.json" --limit 4G --wait --park-idle=5m
gen "$TMPDIR/h.json" --limit 4G --wait=30s
for v in v0.5.4 v1.1.0; do
	"$PY" "$VR_SRC/tests/cdi/validate.py" "$S/$v" "$TMPDIR"/{a,b,d,e,f,g,h}.json "$TMPDIR"/{a,c}.yaml ||
		fail "a spec does not validate against the CDI schema $v"
done
# A spec the schema refuses, so the check can fail at all.
echo '{"cdiVersion": "0.5.0", "kind": "vramctl.io/gpu", "devices": [{"name": "x"}]}' >"$TMPDIR/bad.json"
"$PY" "$VR_SRC/tests/cdi/validate.py" "$S/v1.1.0" "$TMPDIR/bad.json" >/dev/null &&
	fail "the validator accepts a device without containerEdits"

# The lowest version: a name starting with a digit needs 0.5.0; else 0.3.0.
[ "$(version_of "$TMPDIR/a.json")" = 0.5.0 ] || fail "4g: cdiVersion $(version_of "$TMPDIR/a.json")"
[ "$(version_of "$TMPDIR/c.yaml")" = 0.3.0 ] || fail "small: cdiVersion $(version_of "$TMPDIR/c.yaml")"
"$PY" - "$TMPDIR" "$books" "$LIB" <<'PY' || fail "spec content (see above)"
import json, os, sys, yaml
t, books, lib = sys.argv[1:4]
a = json.load(open(f"{t}/a.json"))
ok = a == yaml.safe_load(open(f"{t}/a.yaml"))
dev = a["devices"][0]
ok &= a["kind"] == "vramctl.io/gpu" and dev["name"] == "4g"
env = dev["containerEdits"]["env"]
ok &= env == ["VRAMCTL_LIMIT=4G", f"VRAMCTL_REGISTRY_DIR={books}"]
m = {x["containerPath"]: x for x in dev["containerEdits"]["mounts"]}
ok &= m["/usr/lib/vramctl/libvramctl.so"]["hostPath"] == os.path.realpath(lib)
ok &= "ro" in m["/usr/lib/vramctl/libvramctl.so"]["options"]
ok &= "ro" in m["/etc/ld.so.preload"]["options"]
ok &= m[books]["hostPath"] == books and "rw" in m[books]["options"]
ok &= open(m["/etc/ld.so.preload"]["hostPath"]).read() == "/usr/lib/vramctl/libvramctl.so\n"
b = json.load(open(f"{t}/b.json"))["devices"][0]
ok &= b["name"] == "0-4g_1-50pct" and "VRAMCTL_GROUP=train" in b["containerEdits"]["env"]
ok &= "VRAMCTL_LIMIT=0=4G,1=50%" in b["containerEdits"]["env"]
c = yaml.safe_load(open(f"{t}/c.yaml"))["devices"][0]
ok &= c["name"] == "small" and "VRAMCTL_LIMIT=1536M,1=2G" in c["containerEdits"]["env"]
ok &= not any(e.startswith("VRAMCTL_GROUP=") for e in env)
# --growth: VRAMCTL_GROWTH=1 only; the frameworks' switches are the library's
# to set (never over the image's), and LD_PRELOAD is never an env edit.
e = json.load(open(f"{t}/e.json"))["devices"][0]["containerEdits"]["env"]
ok &= "VRAMCTL_GROWTH=1" in e and not any(x.split("=")[0] in
      ("TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE", "LD_PRELOAD") for x in e)
# --guarantee: VRAMCTL_GUARANTEE as typed, only when given; root's device
# books (and the guard service's socket) mounted read-only (#38).
fd = json.load(open(f"{t}/f.json"))["devices"][0]["containerEdits"]
f = fd["env"]
ok &= "VRAMCTL_GUARANTEE=0=2G,1G" in f and "VRAMCTL_LIMIT=8G" in f and len(f) == 5
fm = {x["containerPath"]: x for x in fd["mounts"]}
ok &= fm.get("/run/vramctl", {}).get("hostPath") == "/run/vramctl" and \
      "ro" in fm["/run/vramctl"]["options"]
ok &= "/run/vramctl" not in m
# --wait and --park-idle (#36): their variables, a park budget, and the
# checkpoint helper mounted where the library looks for it beside itself.
g = json.load(open(f"{t}/g.json"))["devices"][0]["containerEdits"]
ge = g["env"]
ok &= "VRAMCTL_WAIT=60s" in ge and "VRAMCTL_PARK_IDLE=5m" in ge
ok &= any(x.startswith("VRAMCTL_PARK_BUDGET=") and int(x.split("=")[1]) > 0 for x in ge)
gm = {x["containerPath"]: x for x in g["mounts"]}
helper = gm.get("/usr/libexec/vramctl/vramctl-checkpoint")
ok &= bool(helper) and "ro" in helper["options"] and os.access(helper["hostPath"], os.X_OK)
h = json.load(open(f"{t}/h.json"))["devices"][0]["containerEdits"]
ok &= "VRAMCTL_WAIT=30s" in h["env"] and not any("PARK" in x for x in h["env"])
ok &= "/usr/libexec/vramctl/vramctl-checkpoint" not in [x["containerPath"] for x in h["mounts"]]
if not ok:
    print(json.dumps(a, indent=1))
sys.exit(0 if ok else 1)
PY
[ "$(stat -c %a "$books")" = 700 ] || fail "the books directory was not made 0700"

# --output: the file whole, 0644, nothing on standard output.
"$V" cdi generate --books "$books" --limit 2G --output "$TMPDIR/out.json" >"$TMPDIR/stdout"
expect_rc 0 $? "--output"
[ -s "$TMPDIR/stdout" ] && fail "--output: something went to standard output"
cmp -s "$TMPDIR/out.json" <("$V" cdi generate --books "$books" --limit 2G) || fail "--output differs from standard output"
[ "$(stat -c %a "$TMPDIR/out.json")" = 644 ] || fail "--output: mode $(stat -c %a "$TMPDIR/out.json")"
ls "$TMPDIR" | grep -q 'out.json.' && fail "--output left a temporary file"
# Through a symlink, the file it names is written and the symlink stays.
ln -s out.json "$TMPDIR/link.json"
"$V" cdi generate --books "$books" --limit 3G --output "$TMPDIR/link.json"
expect_rc 0 $? "--output through a symlink"
[ -L "$TMPDIR/link.json" ] || fail "--output replaced the symlink with a file"
grep -q '3221225472\|3G' "$TMPDIR/out.json" || fail "--output did not write through the symlink"
# Never over what is not a regular file (it once replaced /dev/full with a
# file): a FIFO, a device node (as root), a directory, symlinks to them.
mkfifo "$TMPDIR/fifo"
ln -s fifo "$TMPDIR/fifo.link"
ln -s nothing "$TMPDIR/dangling.link"
mkdir "$TMPDIR/dir"
targets="fifo fifo.link dangling.link dir"
if [ "$(id -u)" = 0 ] && mknod "$TMPDIR/full" c 1 7 2>/dev/null; then
	ln -s full "$TMPDIR/full.link"
	targets="$targets full full.link"
fi
for t in $targets; do
	before=$(stat -c %F "$TMPDIR/$t")
	"$V" cdi generate --books "$books" --limit 2G --output "$TMPDIR/$t" 2>"$TMPDIR/err"
	expect_rc 125 $? "--output $t ($before)"
	expect_grep "refused" "$TMPDIR/err" "--output $t"
	[ "$(wc -l <"$TMPDIR/err")" = 1 ] || fail "--output $t: more than one line"
	[ "$(stat -c %F "$TMPDIR/$t")" = "$before" ] || fail "--output replaced $t ($before)"
done
ls "$TMPDIR" | grep -q '\.[A-Za-z0-9]\{6\}$' && fail "--output left a temporary file: $(ls "$TMPDIR")"

# Bad arguments: 125, one message naming the bad text, nothing written.
bad() { # bad NEEDLE ARGS...
	local needle=$1
	shift
	rm -f "$TMPDIR/never.json"
	"$V" cdi "$@" >"$TMPDIR/bad.out" 2>"$TMPDIR/bad.err"
	expect_rc 125 $? "cdi $*"
	expect_grep "$needle" "$TMPDIR/bad.err" "cdi $*"
	[ "$(wc -l <"$TMPDIR/bad.err")" = 1 ] || fail "cdi $*: more than one line on stderr"
	[ -s "$TMPDIR/bad.out" ] && fail "cdi $*: a spec was written"
	[ -e "$TMPDIR/never.json" ] && fail "cdi $*: --output was written"
}
bad "--limit SPEC is required" generate --output "$TMPDIR/never.json"
bad "the guarantee 5G is above the cap there (4G)" generate --limit 4G --guarantee 5G \
	--output "$TMPDIR/never.json"
bad "--guarantee '0'" generate --limit 4G --guarantee 0
bad "the guarantee 1G has no cap on every device" generate --limit 0=4G --guarantee 1G
bad "--limit SPEC is required" generate --guarantee 1G
bad "'0'" generate --limit 0 --output "$TMPDIR/never.json"
bad "unknown unit 'X'" generate --limit 4X
bad "more than 100" generate --limit 150%
bad "--limit needs a value" generate --limit
bad "bad group name 'a b'" generate --limit 1G --group 'a b'
bad "--name '-x'" generate --limit 1G --name -x
bad "--name 'a/b'" generate --limit 1G --name a/b
bad "--format 'xml'" generate --limit 1G --format xml
bad "unknown option '--frob'" generate --limit 1G --frob
bad "give --name" generate --limit '4 G'
bad "--registry 'rel': an absolute path is needed" generate --limit 1G --books rel
bad "--registry 'rel': an absolute path is needed" generate --limit 1G --registry rel
bad "--wait: bad time 'soon'" generate --limit 1G --wait=soon
bad "--park-idle: bad time 'x'" generate --limit 1G --park-idle=x
mkdir -m 0777 "$TMPDIR/open"
chmod 0777 "$TMPDIR/open"
bad "mode 0777" generate --limit 1G --books "$TMPDIR/open"
bad "unknown subcommand 'frob'" frob
"$V" cdi >/dev/null 2>&1
expect_rc 125 $? "cdi with no subcommand"
# A library without its ld.so.preload beside it: no spec that preloads nothing.
mkdir -p "$TMPDIR/lonely"
cp "$LIB" "$TMPDIR/lonely/libvramctl.so"
VRAMCTL_LIBRARY=$TMPDIR/lonely/libvramctl.so bad "ld.so.preload is missing" generate --limit 1G
finish
