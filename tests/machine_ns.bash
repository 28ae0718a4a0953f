# tests/machine_ns.bash - sourced by tests that change what the whole
# machine sees (not a test itself): the rest of the test runs in a private
# mount namespace (unshare -m) with its own /etc (a copy: the machine's
# /etc/ld.so.preload and vramctl.conf are never touched), its own
# /run/vramctl (the jobs directory) and its own /dev/shm. Needs root;
# skips without it. Source it after tests/lib.bash, before anything runs.
if [ -z "${VR_MACHINE_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "skipped: needs root (a private mount namespace)"; exit 77; }
	command -v unshare >/dev/null || { echo "skipped: no unshare(1)"; exit 77; }
	mkdir -p /run/vramctl
	VR_MACHINE_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
mkdir -p "$TMPDIR/ns-etc"
cp -a /etc/. "$TMPDIR/ns-etc/" 2>/dev/null
rm -f "$TMPDIR/ns-etc/ld.so.preload"
mount --bind "$TMPDIR/ns-etc" /etc || { echo "skipped: cannot bind-mount over /etc"; exit 77; }
mount -t tmpfs -o mode=0755 tmpfs /run/vramctl || { echo "skipped: cannot mount /run/vramctl"; exit 77; }
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || { echo "skipped: cannot mount /dev/shm"; exit 77; }

# The variables a test keeps in a cleared environment: the simulated GPU's,
# the sanitizers', the paths. None of them is vramctl's.
keep_env() {
	local v
	for v in PATH TMPDIR LD_LIBRARY_PATH ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS \
		$(compgen -e | grep '^VRAMSIM_'); do
		[ -n "${!v+x}" ] && printf '%s=%s\n' "$v" "${!v}"
	done
}
