#!/usr/bin/env bash
# tests/cdi/enforce.sh - `vramctl cdi generate --enforce library|driver|both`:
# with driver or both the spec also sets NVIDIA_GPU_MEMORY_LIMIT and
# NVIDIA_GPU_MEMORY_REQUEST as NVIDIA's apply-cuda-memory-limits CDI hook
# reads them (decimal whole MiB, both present, request <= limit); driver
# alone brings no library; specs NVIDIA's variables cannot express are
# refused; every spec validates against the CDI schema.
. "$VR_SRC/tests/cli/common.bash"
PY=/usr/bin/python3
S=$VR_SRC/tests/cdi/schema
books=$TMPDIR/books
gen() { # gen FILE ARGS...
	local f=$1
	shift
	"$V" cdi generate --books "$books" "$@" >"$f" 2>"$TMPDIR/err"
	expect_rc 0 $? "cdi generate $*"
}

gen lib.json --limit 4G
grep -q NVIDIA_GPU_MEMORY lib.json && fail "library: NVIDIA's variables set"
gen lib2.json --limit 4G --enforce library
cmp -s lib.json lib2.json || fail "--enforce library is not the default"

gen both.json --limit 1536M --enforce both
expect_grep '"NVIDIA_GPU_MEMORY_LIMIT=1536"' both.json "both: the limit in MiB"
expect_grep '"NVIDIA_GPU_MEMORY_REQUEST=0"' both.json "both: the request"
expect_grep '"VRAMCTL_LIMIT=1536M"' both.json "both: the library's cap too"
expect_grep 'ld.so.preload' both.json "both: the library's preload"

gen req.json --limit 4G --guarantee 1G --enforce both
expect_grep '"NVIDIA_GPU_MEMORY_REQUEST=1024"' req.json "the guarantee is the request"
expect_grep '"VRAMCTL_GUARANTEE=1G"' req.json "both: the library's guarantee too"
"$V" cdi generate --books "$books" --limit 4G --guarantee 0=1G --enforce driver >out 2>err
expect_rc 125 $? "--guarantee 0=1G --enforce driver"
[ -s out ] && fail "--guarantee 0=1G --enforce driver: wrote a spec"
gen drv.yaml --limit 4G --enforce driver --format yaml
expect_grep '"NVIDIA_GPU_MEMORY_LIMIT=4096"' drv.yaml "driver: the limit"
expect_grep '"NVIDIA_GPU_MEMORY_REQUEST=0"' drv.yaml "driver: the request"
grep -q 'VRAMCTL_\|ld.so.preload' drv.yaml && fail "driver alone: the library is in the spec"
# Rounded down to whole MiB, never above the cap.
gen round.json --limit 1500000000 --enforce driver
expect_grep '"NVIDIA_GPU_MEMORY_LIMIT=1430"' round.json "rounded down"

# What NVIDIA's variables cannot say: refused, one line, nothing written.
for bad in "0=4G" "50%" "4G,1=2G" "1000K"; do
	"$V" cdi generate --books "$books" --limit "$bad" --enforce driver >out 2>err
	expect_rc 125 $? "--limit $bad --enforce driver"
	[ -s out ] && fail "--limit $bad --enforce driver: wrote a spec"
	[ "$(wc -l <err)" = 1 ] || fail "--limit $bad --enforce driver: not one line: $(cat err)"
done
"$V" cdi generate --books "$books" --limit 4G --enforce kernel >out 2>err
expect_rc 125 $? "--enforce kernel"
expect_grep "--enforce 'kernel': library, driver or both" err "--enforce kernel: message"

if "$PY" -c 'import jsonschema, yaml' 2>/dev/null; then
	for v in v0.5.4 v1.1.0; do
		"$PY" "$VR_SRC/tests/cdi/validate.py" "$S/$v" both.json drv.yaml round.json ||
			fail "an --enforce spec does not validate against the CDI schema $v"
	done
else
	echo "note: no python3-jsonschema: the schema check is skipped"
fi
finish
