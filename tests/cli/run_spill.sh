# `vramctl run --spill[=SIZE]`: the budget it hands the command
# (VRAMCTL_SPILL, in bytes: "auto" is fixed at launch), and its errors: a bad
# size or --spill without --limit is one message, exit 125, and the command
# never runs. What spill does is tested with the library (tests/hook) and
# status (tests/monitor/status_spill.sh).
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G
env_of() { # env_of VAR vramctl-run-args... : prints VAR as the command saw it
	local var=$1
	shift
	"$V" run "$@" -- sh -c "printf '%s' \"\${$var-<unset>}\""
}

# bad --spill | text the message must name
cases=(
	"--spill=|empty"
	"--spill=lots|'lots'"
	"--spill=-1G|'-1G'"
	"--spill=4Q|unknown unit 'Q'"
	"--spill=50%|'50%'"
	"--spill=99999999999T|'99999999999T'"
)
for c in "${cases[@]}"; do
	opt=${c%%|*} want=${c#*|}
	rm -f marker
	"$V" run --limit 1G "$opt" -- touch marker >out 2>err
	expect_rc 125 $? "$opt"
	expect_grep "--spill: " err "$opt"
	expect_grep "$want" err "$opt"
	[ "$(wc -l <err)" -le 1 ] || fail "$opt: more than one line: $(cat err)"
	[ ! -e marker ] || fail "$opt: the command ran"
done
"$V" run --spill=1G -- touch marker 2>err
expect_rc 125 $? "--spill without --limit"
expect_grep "--spill needs --limit" err "--spill without --limit"
"$V" run --spill -- touch marker 2>err
expect_rc 125 $? "bare --spill without --limit"
[ ! -e marker ] || fail "a refused run ran its command"

# The budget as bytes.
got=$(env_of VRAMCTL_SPILL --limit 1G --spill=2G)
[ "$got" = 2147483648 ] || fail "--spill=2G: VRAMCTL_SPILL is '$got'"
got=$(env_of VRAMCTL_SPILL --limit 1G --spill=1.5G)
[ "$got" = 1610612736 ] || fail "--spill=1.5G: VRAMCTL_SPILL is '$got'"
# auto: a quarter of MemAvailable, fixed now.
avail=$(awk '/^MemAvailable:/ { print $2 * 1024; exit }' /proc/meminfo)
if [ -n "$avail" ]; then
	got=$(env_of VRAMCTL_SPILL --limit 1G --spill)
	case $got in '' | *[!0-9]*) fail "--spill: VRAMCTL_SPILL is '$got'" ;; esac
	# Within a GiB of a quarter of what is available now (memory moves).
	lo=$((avail / 4 - (1 << 30))) hi=$((avail / 4 + (1 << 30)))
	[ "${got:-0}" -ge "$lo" ] && [ "${got:-0}" -le "$hi" ] ||
		fail "--spill: $got is not about a quarter of $avail"
fi
# No --spill, or --spill=0: no spill, whatever the caller's environment said.
got=$(VRAMCTL_SPILL=5G env_of VRAMCTL_SPILL --limit 1G)
[ "$got" = "<unset>" ] || fail "no --spill: VRAMCTL_SPILL is '$got'"
got=$(env_of VRAMCTL_SPILL --limit 1G --spill=0)
[ "$got" = "<unset>" ] || fail "--spill=0: VRAMCTL_SPILL is '$got'"
finish
