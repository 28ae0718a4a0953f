#!/usr/bin/env bash
# tests/docs/tree.sh - docs/architecture.md's table "The tree" names the
# tree as it is: every path its "file" column names exists, and every .c
# and .h file of src/, sim/, slurm/ and include/ is named exactly once.
#
# In the "file" column each path is in backquotes; `dir/foo.[ch]` names
# foo.c and foo.h; a bare name (`bar.c`) is in the directory of the path
# before it in the same cell; a path ending in / is a directory.
. "$VR_SRC/tests/lib.bash"
cd "$VR_SRC" || exit 1
doc=docs/architecture.md

# The paths the table names, one a line, expanded.
listed=$(awk '
	/^### The tree$/ { on = 1; next }
	on && /^##/ { exit }
	on && /^\|/ {
		n = split($0, col, "|")
		if (n < 4 || col[3] ~ /^ *-+ *$/ || col[3] ~ /^ *file *$/) next
		cell = col[3]; dir = ""
		while (match(cell, /`[^`]+`/)) {
			p = substr(cell, RSTART + 1, RLENGTH - 2)
			cell = substr(cell, RSTART + RLENGTH)
			if (p ~ /\//) {
				d = p; sub(/\/[^\/]*$/, "", d); dir = d
			} else if (dir == "") {
				print "NODIR " p; continue
			} else {
				p = dir "/" p
			}
			if (p ~ /\.\[ch\]$/) {
				sub(/\.\[ch\]$/, "", p); print p ".c"; print p ".h"
			} else {
				print p
			}
		}
	}' "$doc")
[ -n "$listed" ] || fail "no table \"The tree\" found in $doc"

while IFS= read -r p; do
	case $p in
	"NODIR "*) fail "$doc, The tree: ${p#NODIR } has no directory before it in its cell" ;;
	*/) [ -d "$p" ] || fail "$doc, The tree: $p is not a directory of the tree" ;;
	*) [ -e "$p" ] || fail "$doc, The tree: $p does not exist" ;;
	esac
done <<<"$listed"

# Each source file of the tree named exactly once.
while IFS= read -r f; do
	n=$(grep -cxF -- "$f" <<<"$listed")
	[ "$n" -eq 1 ] || fail "$doc, The tree: $f is named $n times (once expected)"
done < <(find src sim slurm include -type f \( -name '*.c' -o -name '*.h' \) | sort)

finish
