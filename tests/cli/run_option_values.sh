# Options and their values (issue #25): a value is never taken from "--" or
# another option, and a value given with a space to an option whose value
# goes with '=' (--spill, --report) is refused with a hint, never run as the
# command.
. "$VR_SRC/tests/cli/common.bash"

# refused WHAT MESSAGE ARGS...: exit 125, MESSAGE on stderr, nothing run and
# no file made in the current directory.
refused() {
	local what=$1 msg=$2
	shift 2
	rm -rf files && mkdir files && cd files || return
	"$V" run "$@" >../out 2>../err
	expect_rc 125 $? "$what"
	cd ..
	expect_grep "$msg" err "$what"
	[ "$(wc -l <err)" -eq 1 ] || fail "$what: more than one line: $(cat err)"
	[ -z "$(ls -A files)" ] || fail "$what: made files: $(ls -A files)"
	[ ! -s out ] || fail "$what: the command ran: $(cat out)"
}

refused "--trace --report" "option --trace needs a value" \
	--limit 1G --trace --report -- echo ran
refused "--trace --" "option --trace needs a value" --trace -- echo ran
refused "--limit --" "option --limit needs a value" --limit -- echo ran
refused "--group --" "option --group needs a value" --group -- echo ran
refused "--trace-max --" "option --trace-max needs a value" --trace-max -- echo ran
refused "-l --" "option -l needs a value" -l -- echo ran
refused "--limit at the end" "option --limit needs a value" --limit
refused "--guarantee --" "option --guarantee needs a value" --limit 1G --guarantee -- echo ran
refused "--guarantee --limit" "option --guarantee needs a value" \
	--guarantee --limit 1G -- echo ran
refused "--guarantee -1G" "--guarantee '-1G'" --limit 1G --guarantee -1G -- echo ran

refused "--spill 2G" "--spill takes its value with '=' (--spill=2G)" \
	--limit 1G --spill 2G echo ran
refused "--spill 2G --" "--spill takes its value with '=' (--spill=2G)" \
	--limit 1G --spill 2G -- echo ran
refused "--spill auto" "--spill takes its value with '=' (--spill=auto)" \
	--limit 1G --spill auto echo ran
refused "--report r.json --" "--report takes its value with '=' (--report=r.json)" \
	--report r.json -- echo ran
refused "--report r.json" "--report takes its value with '=' (--report=r.json)" \
	--report r.json echo ran
refused "--report r.txt --" "--report takes its value with '=' (--report=r.txt)" \
	--report r.txt -- echo ran

# --wait and --park-idle (#36): the same rule for --wait's value; bad
# times, a budget without parking, and either without a cap refused.
refused "--wait 30" "--wait takes its value with '=' (--wait=30)" \
	--limit 1G --wait 30 echo ran
refused "--wait=soon" "--wait: bad time 'soon'" --limit 1G --wait=soon -- echo ran
refused "--park-idle=x" "--park-idle: bad time 'x'" --limit 1G --park-idle=x -- echo ran
refused "--park-idle without --limit" "--park-idle needs --limit" --park-idle=5m -- echo ran
refused "--wait without --limit" "--wait needs --limit" --wait -- echo ran
refused "--park-budget alone" "--park-budget goes with --park-idle" \
	--limit 1G --park-budget 1G -- echo ran
"$V" run --limit 1G --wait --park-idle=manual --park-budget 2G -- \
	sh -c 'echo "$VRAMCTL_WAIT $VRAMCTL_PARK_IDLE $VRAMCTL_PARK_BUDGET"' >out 2>err
expect_rc 0 $? "--wait --park-idle --park-budget"
expect_grep "60s manual 2147483648" out "the contract of --wait, --park-idle, --park-budget"
"$V" run --limit 1G --wait echo ran >out 2>err
expect_rc 0 $? "--wait COMMAND"
expect_grep ran out "--wait COMMAND runs it"

# What stays as it was: the '=' forms, values that start with '-' given
# with '=', and the command right after a value-less --spill or --report.
"$V" run --limit=1G --spill=2G -- echo ran >out 2>err
expect_rc 0 $? "--spill=2G"
expect_grep ran out "--spill=2G runs the command"
"$V" run --limit 1G --spill echo ran >out 2>err
expect_rc 0 $? "--spill COMMAND"
expect_grep ran out "--spill COMMAND runs it"
"$V" run --limit 1G --trace=--odd -- true 2>err
expect_rc 0 $? "--trace=--odd"
[ -f ./--odd ] || fail "--trace=--odd wrote no file of that name"
"$V" run --limit=1G --guarantee=512M -- echo ran >out 2>err
expect_rc 0 $? "--guarantee=SIZE"
expect_grep ran out "--guarantee=SIZE runs the command"

"$V" run --limit 1G --report echo ran >out 2>err
expect_rc 0 $? "--report COMMAND"
expect_grep ran out "--report COMMAND runs it"

finish
