# books_default.sh - `cdi generate` without --books (#25): never the
# caller's private directory when root writes a spec for every container
# (/tmp/vramctl-0 before): the caller's VRAMCTL_REGISTRY_DIR, else the
# site's registry_dir, else a system directory for root; always said.
. "$VR_SRC/tests/cli/common.bash"

# mounts_of FILE: the spec's mount host paths, one a line.
mounts_of() {
	python3 -c 'import json, sys
for m in json.load(open(sys.argv[1]))["devices"][0]["containerEdits"].get("mounts", []):
    print(m["hostPath"])' "$1"
}

# The site's registry_dir.
mkdir -m 0700 "$TMPDIR/site-books"
printf 'registry_dir = %s/site-books\n' "$TMPDIR" >"$TMPDIR/site.conf"
env -u VRAMCTL_REGISTRY_DIR VRAMCTL_CONFIG="$TMPDIR/site.conf" \
	"$V" cdi generate --limit 1G >spec.json 2>err
expect_rc 0 $? "cdi generate with the site's registry_dir"
mounts_of spec.json | grep -qx "$TMPDIR/site-books" || fail "the site's registry_dir is not mounted: $(mounts_of spec.json)"
expect_grep "books directory $TMPDIR/site-books" err "which directory is said"

# Root, nothing named: the system's directory, not /tmp/vramctl-0.
if [ "$(id -u)" = 0 ]; then
	env -u VRAMCTL_REGISTRY_DIR -u XDG_RUNTIME_DIR VRAMCTL_CDI_SYSTEM_BOOKS="$TMPDIR/run-vramctl" \
		"$V" cdi generate --limit 1G >spec.json 2>err
	expect_rc 0 $? "cdi generate as root"
	mounts_of spec.json | grep -q "/tmp/vramctl-0" && fail "root's private directory is mounted"
	mounts_of spec.json | grep -qx "$TMPDIR/run-vramctl" || fail "the system directory is not mounted: $(mounts_of spec.json)"
	[ "$(stat -c %a "$TMPDIR/run-vramctl")" = 700 ] || fail "the system directory is not 0700"
	expect_grep "books directory $TMPDIR/run-vramctl (the system's default" err "which directory is said"
	expect_grep "registry_dir = $TMPDIR/run-vramctl" err "how the host reads it"
fi

# The caller's VRAMCTL_REGISTRY_DIR: as named, and said.
"$V" cdi generate --limit 1G >spec.json 2>err
mounts_of spec.json | grep -qx "$VRAMCTL_REGISTRY_DIR" || fail "VRAMCTL_REGISTRY_DIR not mounted"
expect_grep "(VRAMCTL_REGISTRY_DIR" err "which directory is said"
finish
