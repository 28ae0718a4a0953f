# The report says the command's status as it was (issue #25): a command that
# never started is reported with 127 or 126 and as not started; and a report
# that cannot be written is said in one line without changing the command's
# exit status (issue #29: a full disk turned exit 0 into 125).
. "$VR_SRC/tests/report/lib.bash"

"$V" run --report -- /nonexistent/prog 2>err
expect_rc 127 $? "a command not found"
expect_grep "vramctl report: /nonexistent/prog (not started, exit status 127)" err \
	"not found: the report's status"
"$V" run --report=nf.json -- /nonexistent/prog 2>err
expect_rc 127 $? "a command not found, JSON"
expect_eq 127 "$(jqv nf.json .exit_status)" "not found: JSON exit_status"
expect_eq false "$(jqv nf.json .started)" "not found: JSON started"
"$V" run --report=ne.json -- /etc/passwd 2>err
expect_rc 126 $? "a command not executable"
expect_eq 126 "$(jqv ne.json .exit_status)" "not executable: JSON exit_status"
"$V" run --report=ok.json -- sh -c 'exit 3' 2>err
expect_rc 3 $? "exit 3"
expect_eq 3 "$(jqv ok.json .exit_status)" "exit 3: JSON exit_status"
expect_eq true "$(jqv ok.json .started)" "exit 3: JSON started"

# A full disk (/dev/full): the command's status stays, one line says why.
for form in --report=/dev/full --trace=/dev/full; do
	"$V" run --limit 1G $form -- "$P" keep 10 2>err
	expect_rc 0 $? "$form: the command's exit 0"
	expect_grep "could not be written: No space left on device" err "$form: said"
	[ "$(grep -c 'could not be written' err)" -eq 1 ] || fail "$form: not one line: $(cat err)"
	"$V" run --limit 1G $form -- sh -c 'exit 4' 2>err
	expect_rc 4 $? "$form: the command's exit 4"
done
# A file size limit the report or trace passes (a 12,000-character command
# line written into them, under ulimit -f 8): the command's status, one
# line, no SIGXFSZ for vramctl (153); and the command itself does not
# inherit an ignored SIGXFSZ from vramctl.
long=$(printf 'x%.0s' {1..12000})
for form in --report=big.txt --report=big.json --trace=big-trace.json; do
	(ulimit -f 8 && exec "$V" run --limit 1G $form -- true "$long") 2>err
	expect_rc 0 $? "$form past ulimit -f: the command's exit 0"
	expect_grep "could not be written: File too large" err "$form past ulimit -f: said"
done
"$V" run --limit 1G --report=ign.txt -- sh -c 'grep SigIgn /proc/self/status' >out 2>err
mask=$(awk '{ print $2 }' out)
[ -n "$mask" ] && [ $((0x$mask & (1 << 24))) -eq 0 ] || fail "the command inherited an ignored SIGXFSZ: $(cat out)"
finish
