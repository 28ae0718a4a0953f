#!/usr/bin/env bash
# job_watch - without the machine's preload, a process of a capped run that
# runs outside the cap (env -u LD_PRELOAD, env -i) is counted against it:
# vramctl run says it once (PID, command, bytes, why), charges it to the
# group so that the members are refused past the cap, gives the charge
# back when it exits; status (table, JSON, Prometheus) lists it under its
# group as `escaped`, and --report lists it. In a private mount namespace
# (tests/machine_ns.bash): the jobs directory is the test's own.
. "$VR_SRC/tests/cli/jobs.bash"

# until_grep PATTERN FILE: waits (at most 10 s) for a line.
until_grep() {
	for ((i = 0; i < 200; i++)); do
		grep -qF -- "$1" "$2" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

mkfifo held go gone
# The run: an escapee holds 2000 MiB until fd 3 of the script closes; a
# member asks 100 MiB when told; then, the escapee gone, 100 MiB again.
"$V" run --limit 1G --group esc --report=report.txt -- sh -c "
	exec 3<>held
	env -u LD_PRELOAD '$HOLDER' 2000 <held 3>&- >escapee.out 2>escapee.err &
	read -r _ <go
	'$HOLDER' 100 </dev/null >member1.out 2>member1.err
	exec 3>&-; wait
	read -r _ <gone
	'$HOLDER' 100 </dev/null >member2.out 2>member2.err" 2>run.err &
run=$!
until_grep "runs outside the cap" run.err || fail "the escapee was never said: $(cat run.err)"
epid=$(awk '/^ready/ { print $3 }' escapee.out)
grep -q '^ready 1 ' escapee.out || fail "the escapee could not allocate: $(cat escapee.out escapee.err)"
expect_grep "vramctl: pid $epid (" run.err "the line names the escapee's PID"
expect_grep "runs outside the cap (LD_PRELOAD removed): 2 GiB on GPU 0, counted against group esc" \
	run.err "the line says why, how much and where"
[ "$(grep -c 'runs outside the cap' run.err)" = 1 ] || fail "said more than once: $(cat run.err)"

# Every view lists it under its group.
"$V" status --format json >status.json
if command -v jq >/dev/null; then
	got=$(jq -r --argjson p "$epid" '.processes[] | select(.host_pid == $p) | "\(.state) \(.group) \(.capped)"' status.json)
	[ "$got" = "escaped esc false" ] || fail "status --json: the escapee is '$got'"
fi
"$V" status >status.txt
grep -E "^ *$epid .* escaped +esc " status.txt >/dev/null || fail "status: no escaped row for $epid: $(cat status.txt)"
"$V" status --format prom >status.prom
grep -E "^vramctl_process_escaped_bytes\{pid=\"$epid\".*group=\"esc\"" status.prom >/dev/null ||
	fail "export: no escaped series for $epid: $(grep escaped status.prom)"

# The group is charged with it: a member is refused past the cap.
echo go >go
until_grep ready member1.out || fail "the member never answered"
grep -q '^ready 0 ' member1.out || fail "a member was granted 100 MiB while the escapee holds 2000: $(cat member1.out member1.err)"
expect_grep "processes of the job outside the cap (vramctl status lists them)" member1.err \
	"the member's denial names what holds the room"
# Gone, its charge is given back (within the watcher's next look).
for ((i = 0; i < 100; i++)); do
	"$V" status --format json | grep -q '"state":"escaped"' || break
	sleep 0.05
done
sleep 1.1 # two looks of the watcher: the charge is set from what NVML lists
echo gone >gone
wait $run
grep -q '^ready 1 ' member2.out || fail "the charge was not given back: $(cat member2.out member2.err)"
expect_grep "escaped: processes of the run outside the cap" report.txt "--report lists escapees"
expect_grep "process $epid " report.txt "--report names the escapee"

# env -i: LD_PRELOAD and VRAMCTL_LIMIT both gone, said so.
"$V" run --limit 1G --group esci -- sh -c "
	exec 3<>held
	env -i ${KEEP[*]} '$HOLDER' 300 <held 3>&- >escapee2.out &
	read -r _ <go; exec 3>&-; wait" 2>run2.err &
run=$!
until_grep "runs outside the cap" run2.err || fail "env -i: the escapee was never said: $(cat run2.err)"
expect_grep "(LD_PRELOAD removed, VRAMCTL_LIMIT too)" run2.err "env -i: why"
echo go >go
wait $run

# Where the driver's own limits answer (R615 and later), the line says
# that they would stop it.
VRAMSIM_DRIVER_RELEASE=615.10 "$V" run --limit 1G --group escd -- sh -c "
	exec 3<>held
	env -u LD_PRELOAD '$HOLDER' 300 <held 3>&- >escapee3.out &
	read -r _ <go; exec 3>&-; wait" 2>run3.err &
run=$!
until_grep "runs outside the cap" run3.err || fail "R615: the escapee was never said: $(cat run3.err)"
expect_grep "; the driver's own limit would stop it (vramctl run --enforce both)" run3.err \
	"R615: the line names the driver's limit"
echo go >go
wait $run
finish
