# A group of processes, one killed with SIGKILL mid-run: the report still
# covers every member and says how each ended (exit status, signal, or
# "without exit handlers" when its parent took the status). Also the denial
# line with several holders, and a trace of the same run.
. "$VR_SRC/tests/report/lib.bash"
sim_only || { echo "skip: needs the simulator's device sizes"; exit 77; }
need_cap

mkfifo hold1 hold2 hold3 r1 r2 r3
# Member 1 (the victim) is a child of member 2, which never reaps it: at
# member 2's exit it is reparented to vramctl (a subreaper under --report),
# which then learns its signal. Member 3 is killed too but reaped by its
# own parent shell.
"$V" run --limit 1G --report=r.json --trace t.json -- sh -c "
	sh -c '$P keep 16 ready wait <hold3 >r3 & wait' &
	$P keep 64 ready wait <hold1 >r1 &
	exec $P keep 32 ready wait <hold2 >r2" 2>err &
run=$!
exec 7>hold1 8>hold2 9>hold3
read -r _ pid1 <r1
read -r _ pid2 <r2
read -r _ pid3 <r3
kill -KILL "$pid1" "$pid3"
has_ended "$pid1"
has_ended "$pid3"
exec 7>&- 9>&-
exec 8>&-
wait $run
expect_rc 0 $? "the command (member 2) exits 0"
jq . r.json >/dev/null || fail "report is not JSON"
how() { jqv r.json ".processes[] | select(.pid == $1) | \"\(.ended) \(.exit_status) \(.signal)\""; }
expect_eq "signal null 9" "$(how "$pid1")" "member 1: killed by signal 9"
expect_eq "exit 0 null" "$(how "$pid2")" "member 2: exit status 0"
expect_eq "vanished null null" "$(how "$pid3")" "member 3: ended without exit handlers"
# The killed ones' memory shows as held when they ended; member 2's as a leak.
expect_eq 67108864 "$(jqv r.json ".processes[] | select(.pid == $pid1) | .devices[0].in_use_at_end_bytes")" "victim's memory"
expect_eq 0 "$(jqv r.json ".processes[] | select(.pid == $pid1) | .held_at_exit | length")" "victim lists no blocks"
expect_eq 33554432 "$(jqv r.json ".processes[] | select(.pid == $pid2) | .held_at_exit[0].bytes")" "member 2's leak"
expect_eq 117440512 "$(jqv r.json '.devices[0].peak_bytes')" "group peak 112 MiB"
# The trace: three starts, three exits, and its order.
jq . t.json >/dev/null || fail "trace is not JSON"
expect_eq 3 "$(jqv t.json '[.traceEvents[] | select(.name == "process start")] | length')" "starts"
expect_eq 3 "$(jqv t.json '[.traceEvents[] | select(.name == "process exit")] | length')" "exits"
expect_eq "killed by signal 9 (SIGKILL)" \
	"$(jqv t.json ".traceEvents[] | select(.name == \"process exit\" and .pid == $pid1) | .args.ended")" "victim's exit in the trace"
# The group's counter ends at 0 and never passes the cap.
expect_eq 0 "$(jqv t.json '[.traceEvents[] | select(.name == "in use" and .ph == "C")] | last | .args.bytes')" "group counter ends at 0"
expect_eq 117440512 "$(jqv t.json '[.traceEvents[] | select(.name == "in use" and .ph == "C") | .args.bytes] | max')" "group counter's peak"

# --- the denial line with several holders ------------------------------------
denial_with_holders err
line=$(grep "vramctl: denied" err)
expect_eq "vramctl: denied 600 MiB on GPU 0: cap 1 GiB, 600 MiB in use (this process 100 MiB; largest others: memprog (pid $pa) 300 MiB, memprog (pid $pb) 200 MiB); hint: the group's peak so far is 600 MiB; granting this request needs a cap of at least 1200 MiB, or vramctl run --spill to serve what does not fit from host memory (slower)" \
	"$line" "denial line with holders"

# Other processes' command names are escaped before they reach a terminal.
esc=$(printf 'mem\033[31mprog')
ln -s "$P" "$esc"
mkfifo h6 r6
"$V" run --limit 1G --group escapes -- "./$esc" keep 300 ready wait <h6 >r6 2>/dev/null &
c=$!
exec 7>h6
read -r _ pc <r6
"$V" run --limit 1G --group escapes --report -- "$P" deny 900 2>err
grep -q "$(printf '\033')" err && fail "a raw escape character reached the terminal: $(cat -v err)"
expect_grep 'largest others: mem\x1b[31mprog (pid '"$pc"') 300 MiB' err "escaped holder name"
exec 7>&-
wait $c
"$V" run --limit 1G --report -- "./$esc" keep 1 2>err
grep -q "$(printf '\033')" err && fail "a raw escape character in the report: $(cat -v err)"
expect_grep 'process ' err "report of an escaped command"
expect_grep 'mem\x1b[31mprog keep 1: exit status 0' err "escaped command in the report"

# --- the --growth hint after one big block at start-up --------------------------
"$V" run --limit 1G -- "$P" keep 900 deny 200 2>err
expect_grep "hint: this process took 900 MiB in one block at start-up (a framework preallocating?): vramctl run --growth lets it grow on demand" err "growth hint"
finish
