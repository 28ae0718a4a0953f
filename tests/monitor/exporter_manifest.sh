#!/usr/bin/env bash
# exporter_manifest - deploy/vramctl-exporter.yaml is a DaemonSet for
# `vramctl export` with the least privilege that works (#27): host PID
# namespace but not the host's IPC namespace or network, every capability
# dropped and only SYS_ADMIN (setns into containers' IPC namespaces),
# SYS_PTRACE (other users' /proc/PID/environ and ns/ipc) and SETUID, SETGID
# (the HTTP server leaves root at the start: #37) added, not
# privileged, no privilege escalation, read-only root filesystem, the books
# directory a read-only hostPath at VRAMCTL_REGISTRY_DIR, NODE_NAME from the
# downward API, the port served the port declared and annotated, selector =
# template labels. A schema check in Python (python3-yaml); kubectl, when
# installed, also decodes it offline (`kubectl label --local`: no cluster
# is needed, none is contacted). Skipped without python3-yaml.
. "$VR_SRC/tests/lib.bash"
M=$VR_SRC/deploy/vramctl-exporter.yaml
[ -f "$M" ] || { fail "$M is missing"; finish; }
if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "SKIP: python3-yaml not installed (Debian package python3-yaml): manifest not checked"
	exit 77
fi
python3 - "$M" <<'PY' || fail "the manifest's checks (above)"
import sys, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)

check(len(docs) == 1, "one document")
d = docs[0]
check(d.get("apiVersion") == "apps/v1" and d.get("kind") == "DaemonSet", "an apps/v1 DaemonSet")
check(d.get("metadata", {}).get("name"), "metadata.name")
spec = d.get("spec", {})
tmpl = spec.get("template", {})
sel = spec.get("selector", {}).get("matchLabels", {})
labels = tmpl.get("metadata", {}).get("labels", {})
check(sel and all(labels.get(k) == v for k, v in sel.items()), "selector matches the template's labels")
ps = tmpl.get("spec", {})
check(ps.get("hostPID") is True, "hostPID: true")
check(not ps.get("hostIPC"), "no hostIPC")
check(not ps.get("hostNetwork"), "no hostNetwork")
check(ps.get("automountServiceAccountToken") is False, "no service account token")
ctrs = ps.get("containers", [])
check(len(ctrs) == 1 and not ps.get("initContainers"), "one container, no init container")
c = ctrs[0] if ctrs else {}
for k in ("name", "image"):
    check(c.get(k), "container." + k)
cmd = c.get("command", []) + c.get("args", [])
check(cmd[:2] == ["vramctl", "export"], "runs vramctl export")
check("--hami" in cmd, "serves HAMi's series")
listen = cmd[cmd.index("--listen") + 1] if "--listen" in cmd[:-1] else ""
port = listen.rpartition(":")[2]
ports = [p.get("containerPort") for p in c.get("ports", [])]
check(port.isdigit() and int(port) in ports, "the port served (%s) is declared (%s)" % (port, ports))
ann = tmpl.get("metadata", {}).get("annotations", {})
check(ann.get("prometheus.io/port") == port, "the scrape annotation names the port")
check(not listen.startswith("127."), "listens beyond loopback (Prometheus scrapes the pod)")
env = {e["name"]: e for e in c.get("env", [])}
check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
      "NODE_NAME from spec.nodeName (HAMi's node label)")
books = env.get("VRAMCTL_REGISTRY_DIR", {}).get("value")
check(books, "VRAMCTL_REGISTRY_DIR set")
sc = c.get("securityContext", {})
check(sc.get("privileged") is not True, "not privileged")
check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false")
check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem: true")
caps = sc.get("capabilities", {})
check(caps.get("drop") == ["ALL"], "drops ALL capabilities")
check(sorted(caps.get("add", [])) == ["SETGID", "SETUID", "SYS_ADMIN", "SYS_PTRACE"],
      "adds exactly SYS_ADMIN, SYS_PTRACE (the collector's) and SETUID, SETGID (the server "
      "leaving root) (got %s)" % caps.get("add"))
check(not {"--user"} & set(cmd) or cmd[cmd.index("--user") + 1] != "0",
      "the server does not serve as root")
check(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccomp RuntimeDefault")
vols = {v["name"]: v for v in ps.get("volumes", [])}
mounts = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == books]
check(len(mounts) == 1 and mounts[0].get("readOnly") is True, "the books directory mounted read-only at %s" % books)
if mounts:
    hp = vols.get(mounts[0]["name"], {}).get("hostPath", {})
    check(hp.get("path") == books, "the books are the node's %s (hostPath)" % books)
for name, v in vols.items():
    check(set(v) <= {"name", "hostPath"} or name != "books", "volume %s" % name)
for m in c.get("volumeMounts", []):
    check(m.get("readOnly") is True, "mount %s read-only" % m.get("mountPath"))
for b in bad:
    print("manifest: " + b)
sys.exit(1 if bad else 0)
PY
if command -v kubectl >/dev/null; then
	out=$(timeout 60 kubectl label --local -f "$M" vramctl.io/check=1 -o name 2>&1)
	[ "$out" = daemonset.apps/vramctl-exporter ] || fail "kubectl cannot decode the manifest: $out"
else
	echo "note: kubectl not installed (Debian package kubernetes-client): only the schema check ran"
fi
finish
