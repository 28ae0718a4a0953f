#!/usr/bin/env bash
# job_preload - with the machine's preload (vramctl preload enable), no
# process of a capped run leaves its cap by changing its environment: env
# -u LD_PRELOAD, env -i, sh -c 'unset ...', a Python subprocess with
# env={...}, setsid + a double fork, a nested run asking for more, a
# process moved into the run's cgroup from outside. Each is refused past
# the run's cap, and the one that lost VRAMCTL_LIMIT says why once.
# In a private mount namespace (tests/machine_ns.bash): the machine's
# /etc/ld.so.preload is never touched.
. "$VR_SRC/tests/cli/jobs.bash"

"$V" preload enable >out 2>err
expect_rc 0 $? "preload enable"
grep -qxF "$LIB" /etc/ld.so.preload || fail "the library is not in /etc/ld.so.preload: $(cat /etc/ld.so.preload)"

# ready N: N allocations were granted. One run, one escape each.
escape() { # escape NAME COMMAND... : runs it in a run capped at 1 GiB
	local name=$1
	shift
	"$V" run --limit 1G --group "$name" -- "$@" </dev/null >"$name.out" 2>"$name.err"
}

escape envu env -u LD_PRELOAD "$HOLDER" 1500
grep -q '^ready 0 ' envu.out || fail "env -u LD_PRELOAD: 1.5 GiB granted under 1 GiB: $(cat envu.out envu.err)"

escape envi env -i "${KEEP[@]}" "$HOLDER" 1500
grep -q '^ready 0 ' envi.out || fail "env -i: 1.5 GiB granted under 1 GiB: $(cat envi.out envi.err)"
pid=$(awk '/^ready/ { print $3 }' envi.out)
expect_grep "pid $pid: VRAMCTL_LIMIT is not set (its environment was changed); capped as part of group envi" \
	envi.err "env -i: the process says why it is capped"
[ "$(grep -c 'VRAMCTL_LIMIT is not set' envi.err)" = 1 ] || fail "env -i: said more than once: $(cat envi.err)"

escape unset sh -c "unset VRAMCTL_LIMIT VRAMCTL_GROUP VRAMCTL_REGISTRY_DIR LD_PRELOAD; exec '$HOLDER' 1500"
grep -q '^ready 0 ' unset.out || fail "sh -c unset: 1.5 GiB granted under 1 GiB: $(cat unset.out unset.err)"

if command -v python3 >/dev/null; then
	escape py python3 -c "
import os, subprocess, sys
keep = dict(v.split('=', 1) for v in sys.argv[2:])
sys.exit(subprocess.run([sys.argv[1], '1500'], env=keep).returncode)" "$HOLDER" "${KEEP[@]}"
	grep -q '^ready 0 ' py.out || fail "subprocess env={}: 1.5 GiB granted under 1 GiB: $(cat py.out py.err)"
fi

# The shell text that waits (bounded) for a holder's ready (or error) line.
wait_ready() {
	echo "for i in \$(seq 400); do grep -q 'ready\|error' $1 2>/dev/null && break; sleep 0.05; done"
}

# A member holds 600 MiB (until the script closes the fifo's one writer,
# fd 3) while a second process asks.
mkfifo held
hold600() { # hold600 OUT: the shell text that starts the member
	echo "exec 3<>held; '$HOLDER' 600 <held 3>&- >$1 &
	$(wait_ready "$1")"
}

# A daemon (setsid, double fork, its environment cleared) asks 600 more:
# the run's subreaper keeps it in the tree.
"$V" run --limit 1G --group daemon -- sh -c "$(hold600 member.out)
	( setsid env -i ${KEEP[*]} '$HOLDER' 600 </dev/null >daemon.out 2>daemon.err & )
	$(wait_ready daemon.out)
	exec 3>&-; wait" 2>daemon.run.err
grep -q '^ready 1 ' member.out || fail "double fork: the member was refused: $(cat member.out)"
grep -q '^ready 0 ' daemon.out || fail "double fork: 600 + 600 MiB granted under 1 GiB: $(cat daemon.out daemon.err)"

# A nested run asks for 8 GiB inside a 1 GiB job: held to the job's cap.
"$V" run --limit 1G --group outer -- sh -c "$(hold600 outer.out)
	'$V' run --limit 8G -- '$HOLDER' 600 </dev/null >nested.out 2>nested.err
	'$V' run --limit 8G -- '$HOLDER' 300 </dev/null >nested2.out 2>>nested.err
	exec 3>&-; wait"
grep -q '^ready 0 ' nested.out || fail "nested run: 600 + 600 MiB granted under the job's 1 GiB: $(cat nested.out nested.err)"
grep -q '^ready 1 ' nested2.out || fail "nested run: 300 MiB refused inside the job's room: $(cat nested2.out nested.err)"
expect_grep "this process is inside group outer (job, cap 1 GiB there): the cap of 8 GiB it was given cannot be passed" \
	nested.err "nested run: the narrower job cap is said"
expect_grep "the job this process is in holds it (group outer: cap 1 GiB" nested.err \
	"nested run: the denial names the job's group"

# A process moved into the run's cgroup from outside, as pam_slurm_adopt
# moves an ssh session: not a descendant, its environment cleared.
mkfifo go_out go_run up
env -i "${KEEP[@]}" sh -c "read -r _ <'$PWD/go_out'; exec '$HOLDER' 600" </dev/null >adopted.out 2>adopted.err &
outsider=$!
"$V" run --limit 1G --group adopt -- sh -c "$(hold600 adopt_member.out)
	echo up >'$PWD/up'; read -r _ <'$PWD/go_run'; exec 3>&-; wait" &
run=$!
read -r _ <up
cg=$(sed -n 's/^0:://p' /proc/$run/cgroup)
root=$(for r in /sys/fs/cgroup /sys/fs/cgroup/unified; do [ -e $r/cgroup.controllers ] && echo $r && break; done)
if [ -n "$root" ] && [[ $cg == */vramctl-job-$run ]]; then
	echo "$outsider" >"$root$cg/cgroup.procs" || fail "cannot move the outsider into $root$cg"
	echo go >go_out
	wait $outsider
	grep -q '^ready 0 ' adopted.out || fail "adopted into the job's cgroup: 600 + 600 MiB granted under 1 GiB: $(cat adopted.out adopted.err)"
else
	echo "note: no cgroup of the run ($cg): the adopted process not checked"
	kill $outsider 2>/dev/null
fi
echo go >go_run
wait $run

# The site's per-user cap (user_limit): every process of one user shares
# it, whatever its environment (none here), a capped run's too (8 GiB asked,
# held to the user's 1 GiB); root's processes are not held by it.
if id -u vrslurm >/dev/null 2>&1; then
	mkdir -p /etc/vramctl
	printf 'user_limit = 1G\n' >/etc/vramctl/vramctl.conf
	chmod 0644 /etc/vramctl/vramctl.conf
	# Where the user can reach (the test's own directory is root's, 0700).
	U=$(mktemp -d /tmp/vramctl-user.XXXXXX) && chmod 0755 "$U"
	trap 'rm -rf "$U"' EXIT
	mkdir -m 0777 "$U/usim" "$U/ud" && chown vrslurm "$U/usim" "$U/ud" && mkfifo -m 0666 "$U/ud/held"
	ln -s "$U/ud" ud
	usim=$U/usim
	asuser() { runuser -u vrslurm -- env -i "${KEEP[@]}" VRAMSIM_STATE_DIR="$usim" "$@"; }
	(cd ud && asuser sh -c "exec 3<>held; '$HOLDER' 600 <held 3>&- >u1.out 2>u1.err &
		$(wait_ready u1.out)
		'$HOLDER' 600 </dev/null >u2.out 2>u2.err
		'$V' run --limit 8G -- '$HOLDER' 600 </dev/null >u3.out 2>u3.err
		exec 3>&-; wait")
	grep -q '^ready 1 ' ud/u1.out || fail "user_limit: the user's first process was refused: $(cat ud/u1.out ud/u1.err)"
	grep -q '^ready 0 ' ud/u2.out || fail "user_limit: 600 + 600 MiB of one user granted under 1 GiB: $(cat ud/u2.out ud/u2.err)"
	grep -q '^ready 0 ' ud/u3.out || fail "user_limit: a run asking 8 GiB passed the user's 1 GiB: $(cat ud/u3.out ud/u3.err)"
	expect_grep "this process is inside group user-$(id -u vrslurm) (user, cap 1 GiB there)" ud/u3.err \
		"user_limit: the capped run is told the user's cap holds"
	env -i "${KEEP[@]}" "$HOLDER" 1500 </dev/null >root.out 2>root.err
	grep -q '^ready 1 ' root.out || fail "user_limit held root's process: $(cat root.out root.err)"
	rm -f /etc/vramctl/vramctl.conf
fi

# disable: the entry goes, every other entry stays as it was.
other=$(ldconfig -p | awk '/libm\.so\.6 / { print $NF; exit }')
printf '%s\n%s\n' "$other" "$(cat /etc/ld.so.preload)" >/etc/ld.so.preload
"$V" preload disable >out 2>err
expect_rc 0 $? "preload disable"
[ "$(cat /etc/ld.so.preload)" = "$other" ] || fail "disable: other entries not kept: $(cat /etc/ld.so.preload)"
finish
