# tests/cgroup2.bash - sourced by the tests of the driver's per-cgroup limits
# (not a test itself: tests/run only runs *.sh).
#
# cgroup2_root: prints the cgroup v2 hierarchy of this machine in which this
# process's cgroup can have children (the standard mount, else a hybrid
# layout's unified one), and sets CG to this process's cgroup v2 path ("" for
# the root); prints nothing when there is none (cgroup v1 only, not root).
cgroup2_root() {
	local r
	CG=$(sed -n 's/^0:://p' /proc/self/cgroup)
	CG=${CG%/}
	for r in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ -e "$r/cgroup.controllers" ] || continue
		if mkdir "$r$CG/vramctl-test-$$" 2>/dev/null; then
			rmdir "$r$CG/vramctl-test-$$"
			echo "$r"
			return
		fi
	done
}
