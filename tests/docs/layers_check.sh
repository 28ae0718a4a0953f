#!/usr/bin/env bash
# tests/docs/layers_check.sh - tests/layers.py, the layering check itself,
# on a small tree made here (#35: it missed `#include <...>` of the tree's
# own headers, and did not read tests/ or bench/): an upward include in
# angle brackets is found, as is a module's include of a test's header;
# tests/ may use any module; the clean tree passes.
. "$VR_SRC/tests/lib.bash"
T=$TMPDIR/tree
mkdir -p "$T/src/low" "$T/src/high" "$T/tests/high" "$T/include"
printf 'high\nlow\n' >"$T/src/LAYERS"
printf '#include "low/l.h"\nint h(void);\n' >"$T/src/high/h.h"
printf 'int l(void);\n' >"$T/src/low/l.h"
printf '#include <high/h.h>\n#include <stdio.h>\nint t(void);\n' >"$T/tests/high/t.c"
python3 "$VR_SRC/tests/layers.py" --root "$T" >out 2>&1 || fail "a clean tree fails: $(cat out)"
# Upward, in angle brackets.
printf '#include <high/h.h>\nint l(void);\n' >"$T/src/low/l.h"
python3 "$VR_SRC/tests/layers.py" --root "$T" >out 2>&1 && fail "an upward <...> include passed"
grep -q "module low depends on high, above it" out || fail "not named: $(cat out)"
printf 'int l(void);\n' >"$T/src/low/l.h"
# A module that includes a test's header.
printf '#include "tests/high/t.c"\nint l(void);\n' >"$T/src/low/l.h"
python3 "$VR_SRC/tests/layers.py" --root "$T" >out 2>&1 && fail "a module's include of tests/ passed"
grep -q "module low depends on tests, above it" out || fail "not named: $(cat out)"
finish
