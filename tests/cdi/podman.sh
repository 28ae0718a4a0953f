#!/usr/bin/env bash
# tests/cdi/podman.sh - vramctl's CDI device and HAMi's contract in a real
# container runtime: Debian's podman (4.3) with runc, a root filesystem built
# here from the host's files (no image is pulled): the holder test program,
# the libraries it needs and the simulated driver, whose state directory is
# shared with the host like a real card.
#
#  1. --device vramctl.io/gpu=NAME from `vramctl cdi generate --limit 1G`,
#     beside a stand-in for NVIDIA's --device nvidia.com/gpu=... (it brings
#     the driver, as NVIDIA's does; both orders of the two flags):
#     the program sees a 1 GiB device and is denied past it; the host's
#     `vramctl status` lists it with its host PID (podman's own answer), the
#     container PID 1 and the cap.
#  2. A second container with the same device at the same time, also PID 1:
#     its own group (no collision in the shared books), its own cap.
#     An image's own LD_PRELOAD is kept (both preloads load). A container
#     in an IPC namespace of its own (podman's default) keeps its cap, and
#     the host's status (root) reads its books through the group's socket.
#  3. A spec with --group: two containers share one cap, with the host's IPC
#     namespace (--ipc host) and, each in its own, without (issue 37: the
#     second kept its own books, 1.2 GiB under 1 GiB; the books are handed
#     over through the group's socket in the shared books directory).
#  4. A container set up exactly as HAMi's device plugin sets one up (its
#     env and mounts, vramctl's library as libvgpu.so, no VRAMCTL_*
#     variable): capped by vramctl, books in HAMi's per-container directory.
#  5. Hostile books in a container in its own IPC namespace (its in-use
#     total overwritten, its lock word overwritten, its lock held by a live
#     member that never lets go, written from inside with tests/cli/regpoke):
#     the host's status answers (under a timeout), says the group is
#     damaged, and still lists another container's group with its cap.
#  6. A podman pod (its containers share the pod's IPC namespace, not the
#     host's) of two containers with one --group: one cap (the second
#     container's allocation past it is refused), and the host's status
#     lists both members, each with its container ID and the shared cap;
#     `vramctl top` (in tmux, where installed) has a CONTAINER column with
#     each member's short container ID.
#  8. The contract file the device mounts (/etc/vramctl/contract): a
#     process whose environment lost the contract, started with `podman
#     exec` into the running container (env -u VRAMCTL_LIMIT, env -i), is
#     held to the container's cap with the container's first process.
#  7. The exporter's DaemonSet (deploy/vramctl-exporter.yaml) run with its
#     own privileges, read from the manifest (python3-yaml), under podman:
#     --pid host, no --ipc host, --cap-drop ALL plus the caps it adds,
#     no-new-privileges, --read-only, root, the books read-only at the same
#     path: `vramctl status --json` inside lists c7 (its own IPC namespace,
#     alive meanwhile) with its cap and use, the manifest's command
#     (`vramctl export`) answers a scrape with c7's series, and the same
#     container without SYS_ADMIN lists c7 too (no namespace is entered).
# The specs go to /var/run/cdi (podman 4.3 has no private spec directory)
# under unique file and device names, removed at the end. Skipped (77) without podman and
# runc, without root, in sanitizer builds, or when no container can start.
. "$VR_SRC/tests/lib.bash"
skip() {
	echo "skipped: $*"
	exit 77
}
case $VR_BUILD in
*-asan | *-tsan) skip "container test runs in the release build only (sanitizer runtimes are not in its root filesystem)" ;;
esac
[ "${VR_TEST_DRIVER:-sim}" = sim ] || skip "needs the simulated driver inside the container"
command -v podman >/dev/null || skip "podman is not installed (scripts/install-deps)"
command -v runc >/dev/null || skip "runc is not installed (scripts/install-deps)"
[ "$(id -u)" = 0 ] || skip "needs root: rootful podman and the CDI spec directory /var/run/cdi"
PY=/usr/bin/python3
"$PY" -c 'import json' 2>/dev/null || skip "needs Debian's python3"
HOLDER=$VR_BUILD/tests/monitor/holder
[ -x "$HOLDER" ] || skip "$HOLDER is not built"
[ -x "$VR_BUILD/tests/cli/regpoke" ] || skip "$VR_BUILD/tests/cli/regpoke is not built"

id=$$$RANDOM
cdidir=/var/run/cdi
specs=() names=() pods=() images=()
# The spec directory itself stays (another run may be writing into it).
cleanup() {
	for n in "${names[@]}"; do podman rm -f -t 0 "$n" >/dev/null 2>&1; done
	for n in "${pods[@]}"; do podman pod rm -f -t 0 "$n" >/dev/null 2>&1; done
	for n in "${images[@]}"; do podman rmi -f "$n" >/dev/null 2>&1; done
	rm -f "${specs[@]}"
	true
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# The root filesystem: files at their host paths, with the libraries ldd names.
R=$TMPDIR/rootfs
mkdir -p "$R"/{bin,usr/lib/sim,proc,sys,dev,etc,tmp,run}
copy() { # copy SRC DEST-IN-ROOTFS, and SRC's libraries at their own paths
	cp -L "$1" "$R$2"
	ldd "$1" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | while read -r l; do
		mkdir -p "$R$(dirname "$l")"
		cp -Ln "$l" "$R$l"
	done
}
copy "$HOLDER" /bin/holder
copy "$VR_BUILD/sim/libcuda.so.1" /usr/lib/sim/libcuda.so.1
copy "$VR_BUILD/sim/libnvidia-ml.so.1" /usr/lib/sim/libnvidia-ml.so.1
copy "$LIB" /tmp/libvramctl-deps.so # its libraries only; the spec mounts the library
copy "$VR_BUILD/tests/cli/regpoke" /bin/regpoke # c10: writes into the container's books
copy "$(command -v sleep)" /bin/sleep            # c8, c9: the pod's infra container
copy "$(command -v env)" /bin/env                # c11: a cleared environment
copy "$V" /bin/vramctl                           # 7: the exporter's privileges
mkdir -p "$R/bin/libexec"                         # where vramctl looks beside itself
copy "$VR_BUILD/libexec/vramctl-export" /bin/libexec/vramctl-export

export VRAMSIM_DEVICES=16G VRAMSIM_UUIDS=GPU-0e0e0e0e-1111-2222-3333-444444444444
# The books are a memfd handed over through the group's socket in the books
# directory: containers share a group whatever their IPC namespaces (c12
# and c13 below); some run with the host's (--ipc host) all the same.
RUN=(podman --runtime runc run --rm -i --network none
	--ulimit nofile=1024:1024 --ulimit nproc=4096:4096
	-e VRAMSIM_STATE_DIR="$VRAMSIM_STATE_DIR"
	-e VRAMSIM_DEVICES -e VRAMSIM_UUIDS -e VRAMCTL_COUNT
	-v "$VRAMSIM_STATE_DIR:$VRAMSIM_STATE_DIR")

names+=("vrt-$id-probe")
SIMLIB=(-e LD_LIBRARY_PATH=/usr/lib/sim) # the driver from the root filesystem
HOSTIPC=(--ipc host)
out=$("${RUN[@]}" "${SIMLIB[@]}" --name "vrt-$id-probe" --rootfs "$R" /bin/holder </dev/null 2>&1)
echo "$out" | grep -q '^ready 0 1$' || skip "no container starts here (podman --runtime runc run --rootfs): $(echo "$out" | tail -n 3)"

declare -A FD
# start NAME PODMAN-ARGS... -- HOLDER-ARGS...: a holder in a container, fed
# by a pipe it holds its memory until; waits (bounded) for its ready line.
start() {
	local n=$1 args=() fd
	shift
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	names+=("vrt-$id-$n")
	mkfifo "$TMPDIR/$n.in"
	(
		# Other holders' pipe ends stay out, or closing one would not end it.
		for f in "${FD[@]}"; do eval "exec $f>&-"; done
		exec "${RUN[@]}" --name "vrt-$id-$n" "${args[@]}" --rootfs "$R" /bin/holder -t "$@" \
			<"$TMPDIR/$n.in" >"$TMPDIR/$n.out" 2>"$TMPDIR/$n.err"
	) &
	exec {fd}>"$TMPDIR/$n.in"
	FD[$n]=$fd
	for _ in $(seq 600); do
		grep -q '^ready\|^error' "$TMPDIR/$n.out" && break
		kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	sed "s/^/  [$n] /" "$TMPDIR/$n.out" "$TMPDIR/$n.err"
}
stop() { # closes the holder's pipe; the container ends with it
	eval "exec ${FD[$1]}>&-"
	podman wait "vrt-$id-$1" >/dev/null 2>&1
}
expect_out() { # expect_out NAME LINE WHAT
	grep -qx -- "$2" "$TMPDIR/$1.out" || fail "$3: '$2' not in $1's output: $(tr '\n' '|' <"$TMPDIR/$1.out")"
}
hostpid() { podman inspect --format '{{.State.Pid}}' "vrt-$id-$1"; }

# status_row HOST-PID FIELD: a field of the status row with that host PID.
status_row() {
	"$V" status --json >"$TMPDIR/status.json" 2>"$TMPDIR/status.err"
	"$PY" - "$TMPDIR/status.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["host_pid"] == int(sys.argv[2]) and p["capped"]]
print(rows[0].get(sys.argv[3]) if len(rows) == 1 else f"{len(rows)} rows")
PY
}

G=$((1 << 30))
mkdir -p "$cdidir"
# A stand-in for NVIDIA's CDI device (kind nvidia.com/gpu, as nvidia-ctk
# writes it, under a name of its own): it brings the driver's libraries
# (here the simulated ones) and their path, so c1 and c2 below pair the two
# devices as on a GPU node.
nv="vrt${id}"
specs+=("$cdidir/vramctl-test-$id-nvidia.json")
cat >"${specs[-1]}" <<EOF
{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "$nv",
 "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void", "LD_LIBRARY_PATH=/usr/lib/nvidia-sim"],
  "mounts": [
   {"hostPath": "$VR_BUILD/sim/libcuda.so.1", "containerPath": "/usr/lib/nvidia-sim/libcuda.so.1", "options": ["ro", "nosuid", "nodev", "bind"]},
   {"hostPath": "$VR_BUILD/sim/libnvidia-ml.so.1", "containerPath": "/usr/lib/nvidia-sim/libnvidia-ml.so.1", "options": ["ro", "nosuid", "nodev", "bind"]}]}}]}
EOF
# 1 + 2: the per-container device (name starts with a digit: cdiVersion 0.5.0).
dev1="${id}x1g"
specs+=("$cdidir/vramctl-test-$id-1.json")
"$V" cdi generate --limit 1G --name "$dev1" --output "${specs[-1]}" || fail "cdi generate failed"
grep -q '"cdiVersion": "0.5.0"' "${specs[-1]}" || fail "a name starting with a digit needs cdiVersion 0.5.0"
start c1 "${HOSTIPC[@]}" --device "nvidia.com/gpu=$nv" --device "vramctl.io/gpu=$dev1" -- 600 600
start c2 "${HOSTIPC[@]}" --device "vramctl.io/gpu=$dev1" --device "nvidia.com/gpu=$nv" -- 600
expect_out c1 "total $G" "device: the program does not see the 1 GiB cap"
expect_out c1 "ready 1 1" "device: 600 + 600 MiB under 1 GiB (one denied), as PID 1"
grep -q 'vramctl: denied 600 MiB on GPU 0: cap 1 GiB' "$TMPDIR/c1.err" || fail "device: no denial line"
expect_out c2 "total $G" "second container: cap"
expect_out c2 "ready 1 1" "second container: its own cap, not c1's group (PID 1 too)"
p1=$(hostpid c1) p2=$(hostpid c2)
[ "$(status_row "$p1" ns_pid)" = 1 ] || fail "status: host PID $p1 (c1) not listed with container PID 1: $(status_row "$p1" ns_pid)"
[ "$(status_row "$p1" cap_bytes)" = "$G" ] || fail "status: c1's cap is not 1 GiB: $(status_row "$p1" cap_bytes)"
g1=$(status_row "$p1" group) g2=$(status_row "$p2" group)
case $g1 in pidns-*) ;; *) fail "status: c1's group is '$g1', not its PID namespace's" ;; esac
[ "$g1" != "$g2" ] || fail "status: two containers collide in group $g1"
[ "$(status_row "$p2" in_use_bytes)" = $((600 << 20)) ] || fail "status: c2's use: $(status_row "$p2" in_use_bytes)"
stop c1
stop c2

# An image that sets its own LD_PRELOAD keeps it: the device preloads through
# /etc/ld.so.preload, and the loader loads both lists.
mkdir -p "$R/opt/image"
cp -L "$(ldconfig -p | awk '/libm\.so\.6 / { print $NF; exit }')" "$R/opt/image/libm.so.6"
start c6 "${HOSTIPC[@]}" "${SIMLIB[@]}" -e LD_PRELOAD=/opt/image/libm.so.6 -e LD_DEBUG=files \
	--device "vramctl.io/gpu=$dev1" -- 600 600
expect_out c6 "total $G" "image LD_PRELOAD: cap"
grep -q 'calling init: /opt/image/libm.so.6' "$TMPDIR/c6.err" || fail "image LD_PRELOAD: the image's own preload was not loaded"
grep -q 'calling init: /usr/lib/vramctl/libvramctl.so' "$TMPDIR/c6.err" || fail "image LD_PRELOAD: vramctl's library was not loaded"
stop c6

# A container in its own IPC namespace (podman's default, a pod's default):
# its cap holds. The host's status lists it with its cap and use (its books
# handed over through its group's socket), and says which IPC namespace it
# is in.
start c7 "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev1" -- 600 600
expect_out c7 "total $G" "private IPC: cap"
expect_out c7 "ready 1 1" "private IPC: 600 + 600 MiB under 1 GiB (one denied)"
"$V" status >"$TMPDIR/c7.status" 2>&1 || fail "status beside books in another IPC namespace: exit $?"
sed 's/^/  [status] /' "$TMPDIR/c7.status"
grep -q "cannot be read" "$TMPDIR/c7.status" && fail "private IPC: the host's status cannot read the container's books"
p7=$(hostpid c7)
ipc7=$(readlink "/proc/$p7/ns/ipc")
[ "$ipc7" != "$(readlink /proc/self/ns/ipc)" ] || fail "private IPC: c7 shares the host's IPC namespace"
[ "$(status_row "$p7" ns_pid)" = 1 ] || fail "private IPC: host PID $p7 (c7) not listed as container PID 1: $(status_row "$p7" ns_pid)"
[ "$(status_row "$p7" cap_bytes)" = "$G" ] || fail "private IPC: c7's cap: $(status_row "$p7" cap_bytes)"
[ "$(status_row "$p7" in_use_bytes)" = $((600 << 20)) ] || fail "private IPC: c7's use: $(status_row "$p7" in_use_bytes)"
[ "ipc:[$(status_row "$p7" ipc_ns)]" = "$ipc7" ] || fail "private IPC: c7's ipc_ns is $(status_row "$p7" ipc_ns), not $ipc7"

# 7: the exporter's DaemonSet (deploy/vramctl-exporter.yaml) under podman,
# with the privileges read from the manifest itself (so the two cannot
# drift): its pod and container security settings become podman's flags
# (hostPID: --pid host; capabilities: --cap-drop/--cap-add; runAsUser:
# --user; allowPrivilegeEscalation: false: no-new-privileges;
# readOnlyRootFilesystem: --read-only; the books volume: the test's books
# directory, read-only as the manifest mounts it, at the same path, named by
# VRAMCTL_REGISTRY_DIR); a setting it cannot translate fails the test.
# Inside, `vramctl status --json` lists c7 (alive, in its own IPC namespace)
# with its cap and use, and the manifest's own command (`vramctl export`)
# answers a scrape with c7's series (fetched in the exporter's network
# namespace: the pod has no host network). The same container without
# SYS_ADMIN lists c7 all the same: the books come through the group's socket,
# no namespace is entered (SYS_ADMIN is for books made as a System V
# segment, under a file size limit below their size).
manifest_flags() { # manifest_flags [CAP-TO-LEAVE-OUT]: podman flags, one a line
	"$PY" - "$VR_SRC/deploy/vramctl-exporter.yaml" "$VRAMCTL_REGISTRY_DIR" "${1:-}" <<'PY'
import sys, yaml
d = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x][0]
books, leave = sys.argv[2], sys.argv[3]
ps = d["spec"]["template"]["spec"]
c, = ps["containers"]
out = []
def untranslated(where, keys):
    if keys:
        sys.exit("manifest: %s: no podman translation for %s" % (where, sorted(keys)))
untranslated("pod securityContext", set(ps.get("securityContext") or {}))
out += ["--pid", "host"] if ps.get("hostPID") else []
out += ["--ipc", "host"] if ps.get("hostIPC") else []
out += ["--network", "host"] if ps.get("hostNetwork") else ["--network", "none"]
sc = dict(c.get("securityContext") or {})
caps = sc.pop("capabilities", {}) or {}
for cap in caps.get("drop", []):
    out += ["--cap-drop", cap]
for cap in caps.get("add", []):
    if cap != leave:
        out += ["--cap-add", cap]
if sc.pop("privileged", False):
    out.append("--privileged")
if sc.pop("allowPrivilegeEscalation", True) is False:
    out += ["--security-opt", "no-new-privileges"]
if sc.pop("readOnlyRootFilesystem", False):
    out.append("--read-only")
user = str(sc.pop("runAsUser", 0))
if "runAsGroup" in sc:
    user += ":%s" % sc.pop("runAsGroup")
out += ["--user", user]
seccomp = (sc.pop("seccompProfile", {}) or {}).get("type", "RuntimeDefault")
if seccomp == "Unconfined":
    out += ["--security-opt", "seccomp=unconfined"]
elif seccomp != "RuntimeDefault":
    sys.exit("manifest: seccompProfile %s: no podman translation" % seccomp)
untranslated("container securityContext", set(sc))
env = {e["name"]: e.get("value") for e in c.get("env", [])}
at = env.get("VRAMCTL_REGISTRY_DIR")
if not at:
    sys.exit("manifest: VRAMCTL_REGISTRY_DIR is not set")
out += ["-e", "VRAMCTL_REGISTRY_DIR=" + books]
m = [m for m in c.get("volumeMounts", []) if m["mountPath"] == at]
if len(m) != 1:
    sys.exit("manifest: the books directory %s is not mounted" % at)
out += ["-v", books + ":" + books + (":ro" if m[0].get("readOnly") else "")]
print("\n".join(out))
PY
}
manifest_command() { # the container's command and args, one a line
	"$PY" - "$VR_SRC/deploy/vramctl-exporter.yaml" <<'PY'
import sys, yaml
d = [x for x in yaml.safe_load_all(open(sys.argv[1])) if x][0]
c, = d["spec"]["template"]["spec"]["containers"]
print("\n".join(c.get("command", []) + c.get("args", [])))
PY
}
if ! "$PY" -c 'import yaml' 2>/dev/null; then
	echo "note: python3-yaml is not installed: the exporter's privileges are not run under podman"
else
	mapfile -t PRIV < <(manifest_flags)
	mapfile -t NOADMIN < <(manifest_flags SYS_ADMIN)
	[ ${#PRIV[@]} -gt 0 ] && [ ${#NOADMIN[@]} -gt 0 ] || {
		fail "exporter: cannot read the manifest's privileges (above)"
		finish
	}
	echo "  exporter's privileges from the manifest: ${PRIV[*]}"
	# The simulated card, as NVIDIA's runtime class brings the driver.
	XRUN=(podman --runtime runc run --rm -i --ulimit nofile=1024:1024 --ulimit nproc=4096:4096
		-e VRAMSIM_STATE_DIR="$VRAMSIM_STATE_DIR" -e VRAMSIM_DEVICES -e VRAMSIM_UUIDS
		-e NODE_NAME="$(hostname)" -v "$VRAMSIM_STATE_DIR:$VRAMSIM_STATE_DIR" "${SIMLIB[@]}")
	names+=("vrt-$id-xstatus")
	timeout 120 "${XRUN[@]}" --name "vrt-$id-xstatus" "${PRIV[@]}" --rootfs "$R" \
		/bin/vramctl status --json </dev/null >"$TMPDIR/xstatus.json" 2>"$TMPDIR/xstatus.err" ||
		fail "exporter: status --json under the manifest's privileges exited $?: $(cat "$TMPDIR/xstatus.err")"
	"$PY" - "$TMPDIR/xstatus.json" "$p7" "$G" "$ipc7" <<'PY' || fail "exporter: status under the manifest's privileges does not list c7 (above)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["host_pid"] == int(sys.argv[2]) and p["capped"]]
ok = len(rows) == 1 and rows[0]["cap_bytes"] == int(sys.argv[3]) and rows[0]["ns_pid"] == 1 \
    and rows[0]["in_use_bytes"] == 600 << 20 and "ipc:[%s]" % rows[0]["ipc_ns"] == sys.argv[4]
print("  [exporter's status] c7:", json.dumps(rows))
sys.exit(0 if ok else 1)
PY
	# Without SYS_ADMIN: c7's books through its group's socket all the same.
	names+=("vrt-$id-xnoadmin")
	timeout 120 "${XRUN[@]}" --name "vrt-$id-xnoadmin" "${NOADMIN[@]}" --rootfs "$R" \
		/bin/vramctl status </dev/null >"$TMPDIR/xnoadmin.txt" 2>&1
	sed 's/^/  [status without SYS_ADMIN] /' "$TMPDIR/xnoadmin.txt"
	grep -q "cannot be read" "$TMPDIR/xnoadmin.txt" && fail "exporter: without SYS_ADMIN, c7's books cannot be read"
	timeout 120 "${XRUN[@]}" --name "vrt-$id-xnoadmin" "${NOADMIN[@]}" --rootfs "$R" \
		/bin/vramctl status --json </dev/null >"$TMPDIR/xnoadmin.json" 2>/dev/null
	"$PY" - "$TMPDIR/xnoadmin.json" "$p7" "$G" <<'PY' || fail "exporter: without SYS_ADMIN, c7 is not listed with its cap"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["host_pid"] == int(sys.argv[2]) and p["capped"]]
sys.exit(0 if len(rows) == 1 and rows[0]["cap_bytes"] == int(sys.argv[3]) else 1)
PY
	# The manifest's command, answering one scrape.
	mapfile -t XCMD < <(manifest_command)
	[ "${XCMD[0]}" = vramctl ] || fail "exporter: the manifest runs '${XCMD[0]}', not vramctl"
	listen=${XCMD[*]}
	listen=${listen#*--listen }
	xport=${listen%% *}
	xport=${xport##*:}
	names+=("vrt-$id-xexport")
	(
		for f in "${FD[@]}"; do eval "exec $f>&-"; done
		exec "${XRUN[@]}" --name "vrt-$id-xexport" "${PRIV[@]}" --rootfs "$R" "/bin/${XCMD[0]}" "${XCMD[@]:1}" \
			</dev/null >"$TMPDIR/xexport.out" 2>"$TMPDIR/xexport.err"
	) &
	xpid=
	for _ in $(seq 300); do
		[ -s "$TMPDIR/xexport.out" ] && xpid=$(hostpid xexport 2>/dev/null) && [ "${xpid:-0}" != 0 ] && break
		xpid=
		sleep 0.1
	done
	[ -n "$xpid" ] || fail "exporter: the manifest's command did not start: $(cat "$TMPDIR/xexport.out" "$TMPDIR/xexport.err")"
	if [ -n "$xpid" ]; then
		nsenter --net="/proc/$xpid/ns/net" "$PY" -c '
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=30).read().decode())
' "$xport" >"$TMPDIR/xexport.metrics" || fail "exporter: no answer on port $xport inside its network namespace"
		grep "pid=\"$p7\"" "$TMPDIR/xexport.metrics" | grep '^vramctl_process_used_bytes' | sed 's/^/  [export] /'
		grep "^vramctl_process_used_bytes{.*pid=\"$p7\"" "$TMPDIR/xexport.metrics" | grep -q " $((600 << 20))\$" ||
			fail "exporter: the scrape has no vramctl_process_used_bytes of c7 (host PID $p7) at 600 MiB"
		g7=$(status_row "$p7" group)
		grep "^vramctl_group_limit_bytes{.*group=\"$g7\"" "$TMPDIR/xexport.metrics" | grep -q " $G\$" ||
			fail "exporter: the scrape has no vramctl_group_limit_bytes of c7's group $g7 at 1 GiB"
	fi
	podman stop -t 10 "vrt-$id-xexport" >/dev/null 2>&1
	wait $!
	sed 's/^/  [export stderr] /' "$TMPDIR/xexport.err"
fi
stop c7

# 3: one group for every container with the device (cdiVersion 0.3.0).
dev3="g${id}"
specs+=("$cdidir/vramctl-test-$id-3.yaml")
"$V" cdi generate --limit 1G --group "shared-$id" --name "$dev3" --format yaml \
	--output "${specs[-1]}" || fail "cdi generate --group failed"
grep -q 'cdiVersion: "0.3.0"' "${specs[-1]}" || fail "a name starting with a letter needs cdiVersion 0.3.0 only"
start c3 "${HOSTIPC[@]}" "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev3" -- 600
start c4 "${HOSTIPC[@]}" "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev3" -- 600
expect_out c3 "ready 1 1" "group: first container"
expect_out c4 "ready 0 1" "group: the second container's 600 MiB passes the shared 1 GiB"
[ "$(status_row "$(hostpid c4)" group)" = "shared-$id" ] || fail "group: c4 not in shared-$id"
stop c3
stop c4
# The same, each container in an IPC namespace of its own.
start c12 "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev3" -- 600
start c13 "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev3" -- 600
expect_out c12 "ready 1 1" "group across IPC namespaces: first container"
expect_out c13 "ready 0 1" "group across IPC namespaces: the second container's 600 MiB passes the shared 1 GiB"
grep -q "keeps its own books" "$TMPDIR/c13.err" && fail "group across IPC namespaces: the second container keeps its own books"
p12=$(hostpid c12) p13=$(hostpid c13)
[ "$(readlink "/proc/$p12/ns/ipc")" != "$(readlink "/proc/$p13/ns/ipc")" ] ||
	fail "group across IPC namespaces: the two containers share an IPC namespace"
for p in "$p12" "$p13"; do
	[ "$(status_row "$p" group)" = "shared-$id" ] || fail "group across IPC namespaces: host PID $p not in shared-$id: $(status_row "$p" group)"
	[ "$(status_row "$p" cap_bytes)" = "$G" ] || fail "group across IPC namespaces: host PID $p's cap: $(status_row "$p" cap_bytes)"
	[ "ipc:[$(status_row "$p" ipc_ns)]" = "$(readlink "/proc/$p/ns/ipc")" ] ||
		fail "group across IPC namespaces: host PID $p's ipc_ns is $(status_row "$p" ipc_ns)"
done
[ "$(status_row "$p12" in_use_bytes)" = $((600 << 20)) ] || fail "group across IPC namespaces: c12's use: $(status_row "$p12" in_use_bytes)"
stop c13
stop c12

# 4: HAMi's device plugin (server.go, Allocate) with HOOK_PATH=/usr/local:
# its env, the library at <hook>/vgpu/libvgpu.so, the per-container cache
# directory at <hook>/vgpu, /tmp/vgpulock and /etc/ld.so.preload.
H=$TMPDIR/hami
uuid=3f0c1e2d-5a6b-4c7d-8e9f-0a1b2c3d4e5f
mkdir -p "$H/containers/pod_ctr" "$H/vgpulock"
chmod 0777 "$H/containers/pod_ctr" "$H/vgpulock"
echo /usr/local/vgpu/libvgpu.so >"$H/ld.so.preload"
start c5 "${HOSTIPC[@]}" "${SIMLIB[@]}" -e CUDA_DEVICE_MEMORY_LIMIT_0=1024m -e CUDA_DEVICE_SM_LIMIT=0 \
	-e CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/$uuid.cache \
	-v "$LIB:/usr/local/vgpu/libvgpu.so:ro" -v "$H/containers/pod_ctr:/usr/local/vgpu" \
	-v "$H/vgpulock:/tmp/vgpulock" -v "$H/ld.so.preload:/etc/ld.so.preload:ro" -- 600 600
expect_out c5 "total $G" "HAMi: the program does not see CUDA_DEVICE_MEMORY_LIMIT_0"
expect_out c5 "ready 1 1" "HAMi: 600 + 600 MiB under 1024m (one denied)"
books=$H/containers/pod_ctr/vramctl
[ -e "$books/hami-$uuid.vrg" ] || fail "HAMi: no books at $books/hami-$uuid.vrg"
p5=$(hostpid c5)
VRAMCTL_REGISTRY_DIR=$books "$V" status --json >"$TMPDIR/hami.json"
"$PY" - "$TMPDIR/hami.json" "$p5" "hami-$uuid" <<'PY' || fail "HAMi: host status does not list the container (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [p for p in d["processes"] if p["group"] == sys.argv[3]]
ok = len(rows) == 1 and rows[0]["host_pid"] == int(sys.argv[2]) and rows[0]["cap_bytes"] == 1 << 30
if not ok:
    print(json.dumps(rows, indent=1))
sys.exit(0 if ok else 1)
PY
stop c5

# 5: hostile books in a container's own IPC namespace. c10's group is
# written into from inside c10 (where its segment is); c11 is another
# container's group beside it. The host's status answers each time, says
# what is wrong with c10's group, and still lists c11 with its cap.
devh="h${id}"
specs+=("$cdidir/vramctl-test-$id-h.json")
"$V" cdi generate --limit 1G --group "hostile-$id" --name "$devh" --output "${specs[-1]}" ||
	fail "cdi generate --group hostile failed"
start c10 "${SIMLIB[@]}" --device "vramctl.io/gpu=$devh" -- 600
start c11 "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev1" -- 300
expect_out c10 "ready 1 1" "hostile: c10 starts"
expect_out c11 "ready 1 1" "hostile: c11 starts"
p10=$(hostpid c10) p11=$(hostpid c11)
# hostile WHAT WANT: pokes c10's books, then the host's status (bounded).
hostile() {
	local what=$1 want=$2 rc
	podman exec "vrt-$id-c10" /bin/regpoke "$VRAMCTL_REGISTRY_DIR" "hostile-$id" $what ||
		fail "hostile: regpoke $what in c10 failed"
	timeout 60 "$V" status >"$TMPDIR/hostile.txt" 2>&1
	rc=$?
	sed "s/^/  [status, $what] /" "$TMPDIR/hostile.txt"
	[ $rc = 0 ] || fail "hostile ($what): the host's status exited $rc (124: it hung)"
	[ -z "$want" ] || grep -q -- "$want" "$TMPDIR/hostile.txt" ||
		fail "hostile ($what): status does not say '$want'"
	timeout 60 "$V" status --json >/dev/null 2>&1 || fail "hostile ($what): status --json exited $?"
	[ "$(status_row "$p11" cap_bytes)" = "$G" ] ||
		fail "hostile ($what): c11 is no longer listed with its cap: $(status_row "$p11" cap_bytes)"
	[ "$(status_row "$p10" group)" = "hostile-$id" ] ||
		fail "hostile ($what): c10 is no longer listed in its group: $(status_row "$p10" group)"
}
hostile "inuse 0x7fffffffffff" "hostile-$id.vrg: damaged"
hostile "lock 0xdeadbeef" "not a live member"
# A lock held by a live member (slot 0's) that never lets it go: the
# host's status reads the books without taking the lock.
hostile "slot0" ""
stop c11
# c10's holder may wait out the lock's bound as it leaves (slot0).
stop c10

# 6: a podman pod: its containers share the pod's IPC namespace (not the
# host's), so a --group across them is one set of books, one cap. The pod's
# infra container runs sleep from an image imported from the root
# filesystem (nothing is pulled); the pod takes no --ulimit, so the
# containers.conf of this test gives it the container's limits.
pod="vrt-$id-pod" img="localhost/vrt-$id-infra"
pods+=("$pod")
images+=("$img")
tar -C "$R" -c . | podman import -q --change 'ENTRYPOINT ["/bin/sleep", "infinity"]' - "$img" >/dev/null ||
	fail "pod: cannot import the infra image"
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n' >"$TMPDIR/containers.conf"
CONTAINERS_CONF=$TMPDIR/containers.conf podman --runtime runc pod create --name "$pod" --network none \
	--infra-image "$img" >/dev/null || fail "pod: podman pod create failed"
devp="p${id}"
specs+=("$cdidir/vramctl-test-$id-p.json")
"$V" cdi generate --limit 1G --group "pod-$id" --name "$devp" --output "${specs[-1]}" ||
	fail "cdi generate --group pod failed"
RUN=(podman --runtime runc run --rm -i --pod "$pod"
	--ulimit nofile=1024:1024 --ulimit nproc=4096:4096
	-e VRAMSIM_STATE_DIR="$VRAMSIM_STATE_DIR"
	-e VRAMSIM_DEVICES -e VRAMSIM_UUIDS -e VRAMCTL_COUNT
	-v "$VRAMSIM_STATE_DIR:$VRAMSIM_STATE_DIR")
start c8 "${SIMLIB[@]}" --device "vramctl.io/gpu=$devp" -- 600
start c9 "${SIMLIB[@]}" --device "vramctl.io/gpu=$devp" -- 600
expect_out c8 "ready 1 1" "pod: first container"
expect_out c9 "ready 0 1" "pod: the second container's 600 MiB passes the pod's shared 1 GiB"
p8=$(hostpid c8) p9=$(hostpid c9)
ipc8=$(readlink "/proc/$p8/ns/ipc")
[ "$ipc8" = "$(readlink "/proc/$p9/ns/ipc")" ] || fail "pod: the two containers do not share an IPC namespace"
[ "$ipc8" != "$(readlink /proc/self/ns/ipc)" ] || fail "pod: the pod shares the host's IPC namespace"
"$V" status >"$TMPDIR/pod.status" 2>&1 || fail "pod: status exited $?"
sed 's/^/  [status] /' "$TMPDIR/pod.status"
for n in c8 c9; do
	p=$(hostpid $n) cid=$(podman inspect --format '{{.Id}}' "vrt-$id-$n")
	[ "$(status_row "$p" group)" = "pod-$id" ] || fail "pod: $n (host PID $p) not listed in pod-$id: $(status_row "$p" group)"
	[ "$(status_row "$p" cap_bytes)" = "$G" ] || fail "pod: $n's cap: $(status_row "$p" cap_bytes)"
	[ "$(status_row "$p" container_id)" = "$cid" ] ||
		fail "pod: $n's container ID is '$(status_row "$p" container_id)', not $cid"
	[ "ipc:[$(status_row "$p" ipc_ns)]" = "$ipc8" ] || fail "pod: $n's ipc_ns is $(status_row "$p" ipc_ns)"
done
[ "$(status_row "$p8" in_use_bytes)" = $((600 << 20)) ] || fail "pod: c8's use: $(status_row "$p8" in_use_bytes)"
# top (in tmux, where installed): a CONTAINER column, each member's short ID.
if command -v tmux >/dev/null; then
	sock=$TMPDIR/tmux.sock
	cat >"$TMPDIR/run-top" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH='$LD_LIBRARY_PATH' VRAMSIM_STATE_DIR='$VRAMSIM_STATE_DIR'
export VRAMSIM_DEVICES='$VRAMSIM_DEVICES' VRAMSIM_UUIDS='$VRAMSIM_UUIDS' VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR'
export NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen
exec '$V' top -d 0.2
EOF
	chmod +x "$TMPDIR/run-top"
	tmux -S "$sock" -f /dev/null new-session -d -s top -x 200 -y 30 "$TMPDIR/run-top" ||
		fail "pod: tmux cannot start top"
	c8id=$(podman inspect --format '{{.Id}}' "vrt-$id-c8") c9id=$(podman inspect --format '{{.Id}}' "vrt-$id-c9")
	for _ in $(seq 100); do
		tmux -S "$sock" capture-pane -p -t top >"$TMPDIR/top.screen" 2>/dev/null
		grep -q " ${c8id:0:12} pod-" "$TMPDIR/top.screen" &&
			grep -q " ${c9id:0:12} pod-" "$TMPDIR/top.screen" && break
		sleep 0.1
	done
	sed 's/^/  [top] /' "$TMPDIR/top.screen"
	grep -q ' CONTAINER ' "$TMPDIR/top.screen" || fail "pod: top has no CONTAINER column"
	for c in "$c8id" "$c9id"; do
		grep -q " ${c:0:12} pod-" "$TMPDIR/top.screen" || fail "pod: top has no row of container ${c:0:12} in its group"
	done
	tmux -S "$sock" kill-server 2>/dev/null
fi
stop c8
stop c9

# 8: the contract file. c11 holds 600 MiB of its 1 GiB; processes started
# in it with podman exec, their environment cleared, ask 600 more.
start c11 "${HOSTIPC[@]}" "${SIMLIB[@]}" --device "vramctl.io/gpu=$dev1" -- 600
expect_out c11 "ready 1 1" "contract: the container's first process"
podman exec "vrt-$id-c11" /bin/env -u VRAMCTL_LIMIT /bin/holder 600 </dev/null \
	>"$TMPDIR/c11u.out" 2>"$TMPDIR/c11u.err"
grep -q '^ready 0 ' "$TMPDIR/c11u.out" ||
	fail "contract: env -u VRAMCTL_LIMIT in the container passed its cap: $(cat "$TMPDIR/c11u.out" "$TMPDIR/c11u.err")"
grep -q 'VRAMCTL_LIMIT is not set (its environment was changed); capped as part of group pidns-' \
	"$TMPDIR/c11u.err" || fail "contract: env -u VRAMCTL_LIMIT: not said: $(cat "$TMPDIR/c11u.err")"
podman exec "vrt-$id-c11" /bin/env -i LD_LIBRARY_PATH=/usr/lib/sim VRAMSIM_STATE_DIR="$VRAMSIM_STATE_DIR" \
	VRAMSIM_DEVICES="$VRAMSIM_DEVICES" VRAMSIM_UUIDS="$VRAMSIM_UUIDS" /bin/holder 600 </dev/null \
	>"$TMPDIR/c11i.out" 2>"$TMPDIR/c11i.err"
grep -q '^ready 0 ' "$TMPDIR/c11i.out" ||
	fail "contract: podman exec env -i passed the container's cap: $(cat "$TMPDIR/c11i.out" "$TMPDIR/c11i.err")"
podman exec "vrt-$id-c11" /bin/env -i LD_LIBRARY_PATH=/usr/lib/sim VRAMSIM_STATE_DIR="$VRAMSIM_STATE_DIR" \
	VRAMSIM_DEVICES="$VRAMSIM_DEVICES" VRAMSIM_UUIDS="$VRAMSIM_UUIDS" /bin/holder 300 </dev/null \
	>"$TMPDIR/c11s.out" 2>"$TMPDIR/c11s.err"
grep -q '^ready 1 ' "$TMPDIR/c11s.out" ||
	fail "contract: 300 MiB inside the container's room refused: $(cat "$TMPDIR/c11s.out" "$TMPDIR/c11s.err")"
stop c11
finish
