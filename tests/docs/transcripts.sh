#!/usr/bin/env bash
# tests/docs/transcripts.sh - every transcript the documentation quotes is
# what vramctl prints now (README, usage.md and architecture.md once quoted
# a demo from before the cap counted the card: 1 GiB free, 920 MiB, where
# it shows 960 and 864 MiB). Each quoted line of the demo's program and of
# vramctl (the [app] lines, the act headers, the command lines, the denial
# line) must be the demo's own line, in the demo's order; a line "..."
# stands for lines left out. README's opening list quotes the start of the
# demo's denial line; README's claim of what a cap of 1 GiB refuses of
# 512 MiB blocks is run; the denial line with holders is run as the pages
# quoting it say; the spill's lines are a spill's run; usage.md's status
# and export examples and vramctl-status(1)'s are their scenarios', as are
# usage.md's doctor examples; usage.md's report is its job.sh run by its
# command.
. "$VR_SRC/tests/report/lib.bash"
has_cap || { echo "skip: the demo needs the real library"; exit 77; }
sim_only || { echo "skip: the demo's figures are the simulator's"; exit 77; }
unset VRAMCTL_COUNT # as users run it: the cap counts the card
"$V" demo >demo.out 2>&1 || fail "vramctl demo failed: $(cat demo.out)"
# The lines a quote may hold, from the demo.
grep -E '^(  \[app\]|vramctl: denied|=== Act|\$ vramctl)' demo.out >demo.lines

# quoted FILE START: the quote's lines (a fenced block starting with START,
# or an indented block's denial line) compared with the demo's, in order.
check_quote() { # check_quote WHAT < quoted lines
	local what=$1 line at=0 n
	while IFS= read -r line; do
		[ "$line" = "..." ] && continue
		case $line in "  [app]"* | "vramctl: denied"* | "=== Act"* | '$ vramctl'*) ;; *) continue ;; esac
		n=$(awk -v from="$at" -v l="$line" 'NR > from && $0 == l { print NR; exit }' demo.lines)
		if [ -z "$n" ]; then
			fail "$what quotes a line the demo does not print (in this order): '$line'"
			return
		fi
		at=$n
	done
}
fenced() { # fenced FILE FIRST-LINE: the fenced block that starts with it
	awk -v first="$2" '/^```/ { if (on) exit; fence = 1; next } fence && $0 == first { on = 1 } on { print } { fence = 0 }' "$1"
}
for f in README.md docs/architecture.md; do
	q=$(fenced "$VR_SRC/$f" "=== Act 2: vramctl run --limit 1G ===")
	[ -n "$q" ] || fail "$f: no quoted act 2"
	check_quote "$f" <<<"$q"
done
# README's opening list quotes the start of the demo's denial line (over a
# line break, up to its "...").
intro=$(awk '/^- out-of-memory errors that say why/ { on = 1 } on { print } on && /, \.\.\.`/ { exit }' \
	"$VR_SRC/README.md" | tr '\n' ' ' | sed 's/  */ /g; s/.*(`//; s/, \.\.\.`.*//')
[ -n "$intro" ] || fail "README: the opening list quotes no denial line"
awk -v q="$intro" 'index($0, q) == 1 { f = 1 } END { exit !f }' demo.lines || fail "README's opening list quotes '$intro', which no line of the demo starts with"
# usage.md quotes the demo's denial line (indented).
grep -E '^    vramctl: denied 256 MiB on GPU 0: cap 1 GiB' "$VR_SRC/docs/usage.md" | sed 's/^    //' >usage.quote
[ -s usage.quote ] || fail "usage.md: the demo's denial line is not quoted"
check_quote docs/usage.md <usage.quote

# The denial line with holders (vramctl-run(1), architecture.md, report.md,
# usage.md), as users run it: three processes of one group under 1 GiB
# (300, 200, then 100 MiB and 600 more), each with its 64 MiB context. Its
# PIDs are quoted as 4242 and 4243.
denial_with_holders err
grep "vramctl: denied" err | sed "s/(pid $pa)/(pid 4242)/; s/(pid $pb)/(pid 4243)/" >holders.line
[ -s holders.line ] || fail "no denial line with holders: $(cat err)"
for f in docs/architecture.md docs/report.md docs/usage.md man/vramctl-run.1; do
	grep -E '^ *vramctl: denied 600 MiB on GPU 0: cap 1 GiB, [0-9]+ MiB in use .*largest others' \
		"$VR_SRC/$f" | sed 's/^ *//; s/\\-/-/g' >quote
	[ -s quote ] || fail "$f: the denial line with holders is not quoted"
	while IFS= read -r q; do
		[ "$q" = "$(cat holders.line)" ] || fail "$f quotes '$q'; the line is '$(cat holders.line)'"
	done <quote
done

# README: under --limit 1G a program's second 512 MiB block is refused (its
# context, 64 MiB on the simulator, counts: 512 + 512 + 64 > 1 GiB).
"$V" run --limit 1G -- "$P" keep 512 deny 512 2>err
expect_rc 0 $? "the second 512 MiB block refused under 1 GiB: $(cat err)"
grep -q "second .cuMemAlloc. of 512 MiB" "$VR_SRC/README.md" ||
	fail "README does not say the second 512 MiB block is refused"
# The spill's lines (usage.md, spill.md, vramctl-run(1)): under --limit 4G
# --spill=16G on a 16 GiB card, a program that fills the cap on the card
# (4032 MiB and its 64 MiB context), then 256 MiB (the first spill), then
# 15.25 GiB more, is refused 1 GiB.
VRAMSIM_DEVICES=16G "$V" run --limit 4G --spill=16G -- "$P" keep 4032 keep 256 keep 15616 deny 1024 2>spill.out
expect_rc 0 $? "the spill's run: $(cat spill.out)"
for f in docs/usage.md docs/spill.md man/vramctl-run.1; do
	grep -E '^ *vramctl: (GPU 0 is at its cap|denied [^;]*; spill: host budget)' "$VR_SRC/$f" |
		sed 's/^ *//; s/\\-/-/g' >quote
	[ -s quote ] || fail "$f: no spill line quoted"
	while IFS= read -r q; do
		grep -qxF -- "$q" spill.out || fail "$f quotes '$q'; the run printed: $(cat spill.out)"
	done <quote
done

# top_screen COLUMNS WANT OUT: `vramctl top` (NO_COLOR) in a tmux pane of
# COLUMNS x 30 under this environment, polled (at most 10 s: NVML is read
# in the background) until its first lines, masked as top_lines does, are
# WANT's; the last screen in OUT. 1 when they never were.
top_lines() { # PIDs, column widths and the HISTORY glyphs aside
	sed -E 's/^[0-9]+ /PID /; s/run-[0-9]+-?[0-9a-f]*~/run-G~/; s/\] [^ ]*$/]/; s/ +/ /g; s/ $//' | sed '/^$/d'
}
top_screen() {
	local i n sock=$PWD/tmux.sock
	command -v tmux >/dev/null || return 2
	cat >run-top <<EOF2
#!/bin/sh
export LD_LIBRARY_PATH='$LD_LIBRARY_PATH' VRAMSIM_STATE_DIR='$VRAMSIM_STATE_DIR'
export VRAMSIM_DEVICES='${VRAMSIM_DEVICES:-}' VRAMSIM_UUIDS='${VRAMSIM_UUIDS:-}' VRAMSIM_NAME='${VRAMSIM_NAME:-}'
export VRAMSIM_CONTEXT_BYTES='${VRAMSIM_CONTEXT_BYTES:-}' VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR'
export VRAMCTL_DEVICE_DIR='$VRAMCTL_DEVICE_DIR'
[ -n "\$VRAMSIM_DEVICES" ] || unset VRAMSIM_DEVICES
[ -n "\$VRAMSIM_UUIDS" ] || unset VRAMSIM_UUIDS
[ -n "\$VRAMSIM_NAME" ] || unset VRAMSIM_NAME
[ -n "\$VRAMSIM_CONTEXT_BYTES" ] || unset VRAMSIM_CONTEXT_BYTES
export NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen
exec '$V' top -d 0.2
EOF2
	chmod +x run-top
	tmux -S "$sock" -f /dev/null new-session -d -s top -x "$1" -y 30 "$PWD/run-top" || return 2
	n=$(top_lines <"$2" | wc -l)
	top_lines <"$2" >top.want
	for ((i = 0; i < 200; i++)); do
		tmux -S "$sock" capture-pane -p -t top >"$3" 2>/dev/null
		top_lines <"$3" | head -n "$n" | cmp -s - top.want && break
		sleep 0.05
	done
	tmux -S "$sock" kill-server 2>/dev/null
	top_lines <"$3" | head -n "$n" | cmp -s - top.want
}

# held NAME CMD...: CMD in the background, its stdin a pipe this shell
# holds open (the holders' "wait until stdin closes"), its stdout read
# until its "ready" line; release_held closes every such pipe and waits.
HELD=()
held() {
	local name=$1 fd
	shift
	mkfifo "in.$name" "out.$name"
	"$@" <"in.$name" >"out.$name" 2>/dev/null &
	exec {fd}>"in.$name"
	HELD+=("$fd")
	read -r _ _ _ <"out.$name"
}
release_held() {
	local fd
	for fd in "${HELD[@]}"; do exec {fd}>&-; done
	HELD=()
	wait
}

# top_check COLUMNS QUOTE WHAT: top's screen against the quoted lines.
top_check() {
	top_screen "$1" "$2" "$2.screen"
	case $? in
	1) fail "$3 is not what top shows: $(top_lines <"$2.screen" | diff top.want -)" ;;
	2) echo "tmux cannot run here: $3 not checked" ;;
	esac
}

# usage.md's `vramctl status` and `export` examples: on two 80 GiB cards
# whose contexts take 512 MiB, an uncapped program holding 30000 MiB, two
# runs of group train under 20G (9000 MiB; 6000 MiB, then 8000 MiB
# refused) and a run of its own under 10G (4000 MiB). Its own books and
# card; PIDs, NSPIDs, the run's group name and the columns' widths aside.
status_example() {
	local f0=$fails
	mkdir -m 700 reg80 sim80 dev80
	cp "$VR_BUILD/tests/monitor/holder" holder
	export VRAMCTL_REGISTRY_DIR=$PWD/reg80 VRAMCTL_DEVICE_DIR=$PWD/dev80 VRAMSIM_STATE_DIR=$PWD/sim80
	export VRAMSIM_DEVICES=80G,80G VRAMSIM_NAME="NVIDIA H100 80GB HBM3" VRAMSIM_CONTEXT_BYTES=512M
	held u ./holder 30000
	held a "$V" run --group train --limit 20G -- ./holder 9000
	held b "$V" run --group train --limit 20G -- ./holder 6000 8000
	held c "$V" run --limit 10G -- ./holder 4000
	"$V" status >status.out 2>&1 || fail "vramctl status: $(cat status.out)"
	"$V" status --format prom >prom.out 2>&1 || fail "vramctl status --format prom: $(cat prom.out)"
	fenced "$VR_SRC/docs/usage.md" 'vramctl top  2 GPUs  4 process rows  sort: ON CARD    h: help' >top.quote
	[ -s top.quote ] || fail "usage.md: the top example is not quoted"
	top_check 120 top.quote "usage.md's top example"
	release_held
	[ "$fails" -eq "$f0" ] # a subshell: its failures reach the test by its status
}
(status_example) || fail "the status example's run failed"
status_lines() { # the table's lines, what varies from run to run masked;
	# sorted, as the groups come in the books directory's order
	sed -E 's/run-[0-9]+-[0-9a-f]+/run-G/g; s/^[0-9]+ +[0-9]+ /PID NSPID /; s/ +/ /g; s/ $//' | sort
}
fenced "$VR_SRC/docs/usage.md" '$ vramctl status' | tail -n +2 | status_lines >want
[ -s want ] || fail "usage.md: the status example is not quoted"
status_lines <status.out >got
diff want got >status.diff || fail "usage.md's status example is not what status prints: $(cat status.diff)"
grep -E '^vramctl_[a-z_]+\{' "$VR_SRC/docs/usage.md" | sed 's/GPU-…/GPU-fd315375-11e4-4c80-8d70-78d01a0b326e/' >quote
[ -s quote ] || fail "usage.md: no export series quoted"
sed -E 's/pid="[0-9]+",ns_pid="[0-9]+"/pid="P",ns_pid="P"/' prom.out >prom.masked
while IFS= read -r q; do
	q=$(sed -E 's/pid="[0-9]+",ns_pid="[0-9]+"/pid="P",ns_pid="P"/' <<<"$q")
	grep -qxF -- "$q" prom.masked || fail "usage.md quotes the series '$q', which export does not write"
done <quote

# vramctl-status(1)'s example: on the simulator's 16 GiB card, an uncapped
# program holding 1500 MiB and two of group train under 4G (1024 + 1024
# MiB; 1024 MiB, then 2048 MiB refused), all named train.py.
status_man() {
	local f0=$fails
	mkdir -m 700 regm simm devm
	cp "$VR_BUILD/tests/monitor/holder" train.py
	export VRAMCTL_REGISTRY_DIR=$PWD/regm VRAMCTL_DEVICE_DIR=$PWD/devm VRAMSIM_STATE_DIR=$PWD/simm
	export VRAMSIM_UUIDS=GPU-0e0e0e0e-1111-2222-3333-444444444444
	unset VRAMSIM_DEVICES
	held mu ./train.py 1500
	held ma "$V" run --group train --limit 4G -- ./train.py 1024 1024
	held mb "$V" run --group train --limit 4G -- ./train.py 1024 2048
	"$V" status >status_man.out 2>&1 || fail "vramctl status: $(cat status_man.out)"
	sed -n '/^vramctl top  1 GPU/,/^\.EE$/p' "$VR_SRC/man/vramctl-top.1" | sed '$d' >top_man.quote
	[ -s top_man.quote ] || fail "vramctl-top(1): the example is not quoted"
	top_check 110 top_man.quote "vramctl-top(1)'s example"
	release_held
	[ "$fails" -eq "$f0" ] # a subshell: its failures reach the test by its status
}
(status_man) || fail "the status page's example failed"
sed -n '/^\$ vramctl status$/,/^\.EE$/p' "$VR_SRC/man/vramctl-status.1" | sed '1d;$d' |
	sed -E 's|/[^ ]*/train\.py|DIR/train.py|' | status_lines >want
[ -s want ] || fail "vramctl-status(1): the example is not quoted"
sed -E 's|/[^ ]*/train\.py|DIR/train.py|' status_man.out | status_lines >got
diff want got >status.diff || fail "vramctl-status(1)'s example is not what status prints: $(cat status.diff)"

# usage.md's over-cap line is the formatter's, as its golden pins it
# (tests/monitor/test_format checks the table against it).
q=$(grep -E '^group g1 on GPU 0: over cap on the card by' "$VR_SRC/docs/usage.md")
[ -n "$q" ] || fail "usage.md: the over-cap line is not quoted"
grep -qxF -- "$q" "$VR_SRC/tests/monitor/golden/on_card.table" ||
	fail "usage.md quotes '$q', which is not the formatter's line (tests/monitor/golden/on_card.table)"

# usage.md's doctor examples: a healthy machine (the simulator, nothing
# registered yet) and a broken one (persistence off, CUDA_VISIBLE_DEVICES
# naming a GPU that does not exist, a group left behind, a preloaded
# library replacing dlsym: the tests' stand-in for HAMi-core's), every
# line as doctor prints it, the install's paths, the kernel's release and
# the books directory aside.
doctor_lines() { # doctor_lines LIBDIR BOOKS: the lines compared, masked
	sed -E "s|$1/|LIB/|g; s|$2|BOOKS|g; s|Linux [^ ]+\$|Linux RELEASE|"
}
doc_lines() { # the document's quote, its paths masked as doctor_lines does
	sed -E 's|/tmp/vramctl/lib/vramctl/|LIB/|g; s|/tmp/vramctl/libexec/vramctl/|LIB/libexec/|g; s|/tmp/vgpu/libvgpu.so|LIB/tests/cli/libfakevgpu.so|g
		s|/tmp/run-[0-9]+/vramctl|BOOKS|g; s|Linux [^ ]+$|Linux RELEASE|'
}
(
	export VRAMCTL_REGISTRY_DIR=$PWD/doctor-books VRAMSIM_STATE_DIR=$PWD/doctor-sim
	unset VRAMSIM_DEVICES
	"$V" doctor >doctor.out 2>&1
	printf '$ echo $?\n%d\n' $? >>doctor.out
)
fenced "$VR_SRC/docs/usage.md" '$ LD_LIBRARY_PATH=/tmp/vramctl/lib/vramctl/sim vramctl doctor' |
	tail -n +2 | doc_lines >want
[ -s want ] || fail "usage.md: the healthy doctor is not quoted"
doctor_lines "$VR_BUILD" "$PWD/doctor-books" <doctor.out >got
diff want got >doctor.diff || fail "usage.md's healthy doctor is not what doctor prints: $(cat doctor.diff)"

(
	export VRAMCTL_REGISTRY_DIR=$PWD/doctor-books2 VRAMSIM_STATE_DIR=$PWD/doctor-sim2
	unset VRAMSIM_DEVICES
	"$V" run --group notebook --limit 4G -- true || exit 1
	VRAMSIM_PERSISTENCE=0 LD_PRELOAD=$VR_BUILD/tests/cli/libfakevgpu.so CUDA_VISIBLE_DEVICES=0,1 \
		"$V" doctor >doctor2.out 2>&1
	printf '$ echo $?\n%d\n' $? >>doctor2.out
) || fail "the broken doctor's run failed"
fenced "$VR_SRC/docs/usage.md" '$ export LD_LIBRARY_PATH=/tmp/vramctl/lib/vramctl/sim' |
	sed -n '/ vramctl doctor$/,$p' | tail -n +2 | doc_lines >want
[ -s want ] || fail "usage.md: the broken doctor is not quoted"
doctor_lines "$VR_BUILD" "$PWD/doctor-books2" <doctor2.out >got
diff want got >doctor.diff || fail "usage.md's broken doctor is not what doctor prints: $(cat doctor.diff)"

# usage.md's report: the job.sh it shows, run by the command it shows,
# prints every line it quotes, the PIDs, times, memprog.c's line numbers and
# the C library's frames aside (they are the build's and the machine's).
fenced "$VR_SRC/docs/usage.md" '#!/bin/bash' >job.sh
grep -q '^\./train ' job.sh || fail "usage.md: no job.sh quoted"
chmod +x job.sh
cp "$P" train && cp "$P" loader
fenced "$VR_SRC/docs/usage.md" '$ vramctl run --limit 2G --report --stacks --trace trace.json -- ./job.sh' >report.quote
[ -s report.quote ] || fail "usage.md: the report's transcript is not quoted"
read -r _ _ cmd <report.quote
[ "${cmd% -- ./job.sh}" != "$cmd" ] || fail "usage.md: the report's command is not job.sh's: $cmd"
# shellcheck disable=SC2086 # the options as the document writes them
"$V" ${cmd% -- ./job.sh} -- ./job.sh 2>report.out
expect_rc 0 $? "job.sh under the report: $(cat report.out)"
report_lines() { # the lines compared, with what varies from run to run masked
	sed -E 's/\(pid [0-9]+\)/(pid PID)/g; s/^process [0-9]+ /process PID /
		s/ (ran|at) [0-9]+\.[0-9]+ s/ \1 T s/g; s/memprog\.c:[0-9]+/memprog.c:N/g' |
		grep -v '^ *by __libc_start'
}
tail -n +2 report.quote | report_lines >want
report_lines <report.out >got
diff want got >report.diff || fail "usage.md's report transcript is not what the run prints: $(cat report.diff)"
finish
