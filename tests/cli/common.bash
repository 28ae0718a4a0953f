# tests/cli/common.bash - helpers sourced by the tests of `vramctl run` and
# `vramctl demo` (not a test itself: tests/run only runs *.sh).
. "$VR_SRC/tests/lib.bash"

# expect_rc WANT GOT WHAT
expect_rc() {
	[ "$2" = "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_grep PATTERN FILE WHAT: a fixed string in a file
expect_grep() {
	grep -qF -- "$1" "$2" || { fail "$3: '$1' not in output:"; sed 's/^/      /' "$2" >&2; }
}

sim_only() { [ "${VR_TEST_DRIVER:-sim}" = sim ]; }

# doc_form DOC TEXT ERR WHAT: each line the page DOC (under the source
# tree; indentation and roff's \- undone) quotes that holds TEXT has the
# form of a line ERR holds with TEXT: sizes, specs, quoted names, group
# names, a PID's command, the guard's socket, UUIDs and numbers aside (pages quote a message
# with other figures than a test's).
doc_form() {
	local q n=0 mask='s/GPU-[0-9a-f.-]+/GPU-U/g; s/[0-9]+(\.[0-9]+)? (B|KiB|MiB|GiB|TiB)\b/SIZE/g
		s/\b[0-9]+(\.[0-9]+)?[KMGT]\b/SPEC/g; s/'"'[^']*'"'/Q/g; s/group [A-Za-z0-9_.-]+/group G/g
		s/(pid [0-9]+) \([^)]*\)/\1 (CMD)/g; s|/[^ :]+/guard\.sock|SOCK|g; s/[0-9]+/N/g'
	grep -F -- "$2" "$3" | sed -E "$mask" >doc_form.said
	while IFS= read -r q; do
		n=$((n + 1))
		grep -qxF -- "$q" doc_form.said ||
			fail "$4: $1 quotes a line of another form: '$q'; said: $(cat doc_form.said)"
	done < <(sed 's/\\-/-/g; s/^ *//' "$VR_SRC/$1" | grep -F -- "$2" | sed -E "$mask")
	[ "$n" -gt 0 ] || fail "$4: $1 quotes no line with '$2'"
}


# Under TSan, if the TSan-built library cannot be preloaded into an
# uninstrumented program (it crashed /bin/true when these tests were written:
# the hook's business, tested by its own tests), these tests still exercise
# the TSan-built vramctl itself, with a harmless stand-in named libvramctl.so
# as the library; checks that need the real cap are skipped (has_cap fails).
# In every other build the real library is used, and a crash fails the test.
has_cap() { true; }
case $VR_BUILD in
*-tsan)
	if ! LD_PRELOAD=$LIB /bin/true 2>/dev/null; then
		echo "note: the TSan-built $LIB crashes /bin/true; using a stand-in"
		mkdir -p "$TMPDIR/stand-in"
		cp "$(ldconfig -p | awk '/libm\.so\.6 / { print $NF; exit }')" \
			"$TMPDIR/stand-in/libvramctl.so"
		export VRAMCTL_LIBRARY=$TMPDIR/stand-in/libvramctl.so
		LIB=$VRAMCTL_LIBRARY
		has_cap() { false; }
	fi
	;;
esac
