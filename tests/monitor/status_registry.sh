# status_registry.sh - `status --registry DIR` for a directory that is not
# there reports the registry as unavailable and says why (#25); the default
# directory not made yet is normal (no capped process ran), and says so.
. "$VR_SRC/tests/monitor/lib.bash"

"$V" status --registry "$TMPDIR/nonexistent" --json >out 2>err
[ $? = 0 ] || fail "status --registry missing: exit $?: $(cat err)"
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["registry"]["available"] is False, d["registry"]
assert any(sys.argv[1] in n and "does not exist" in n for n in d["notes"]), d["notes"]
' "$TMPDIR/nonexistent" <out || fail "status --registry missing: JSON"
"$V" status --registry "$TMPDIR/nonexistent" >out 2>err
grep -qF "registry $TMPDIR/nonexistent does not exist" out || fail "status text: $(cat out)"
"$V" status --registry "$TMPDIR/nonexistent" --format prom >out 2>err
grep -qx "vramctl_registry_up 0" out || fail "prom: $(grep registry_up out)"

: >"$TMPDIR/file"
"$V" status --registry "$TMPDIR/file" --json >out 2>err
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["registry"]["available"] is False, d' <out ||
	fail "status --registry naming a file: available"

# The default directory, not made yet: available, nothing capped ran.
VRAMCTL_REGISTRY_DIR=$TMPDIR/later "$V" status --json >out 2>err
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["registry"]["available"] is True, d' <out ||
	fail "a default registry not made yet: available"
finish
