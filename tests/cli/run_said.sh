# What run says when what holds is not what was asked (issue #25): a run
# with no cap in force says once that it runs uncapped; a cap above a card's
# size says the card's size holds (the library, as it sets the device up);
# a spill budget past the host's available memory says
# what can really be served. Each is one line, and the command still runs.
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G

"$V" run -- sh -c 'echo ran' >out 2>err
expect_rc 0 $? "a run with no cap"
expect_grep "vramctl: no cap in force (no --limit, no site default_limit): 'sh' runs uncapped" err \
	"no cap is said"
[ "$(wc -l <err)" -eq 1 ] || fail "no cap: not one line: $(cat err)"
# A nested run under its parent's cap, or a run with --limit: nothing said.
VRAMCTL_LIMIT=1G "$V" run -- true 2>err
[ ! -s err ] || fail "a run under an enclosing cap said: $(cat err)"
"$V" run --limit 1G -- true 2>err
[ ! -s err ] || fail "a capped run said: $(cat err)"

# A cap above the card's size: the library says, once per process as it
# sets the device up, that the card's size is what bounds it (for every
# spec: a plain amount too, where run never looks at the devices).
if sim_only && has_cap; then
	for args in "--limit 17G" "--limit 0=17G" "--limit 17G --group big"; do
		# shellcheck disable=SC2086
		"$V" run $args -- "$VR_BUILD/tests/report/memprog" temp 1 >out 2>err
		expect_rc 0 $? "$args on a 16 GiB card"
		expect_grep "vramctl: GPU 0: the cap (17 GiB) is more than the card holds (16 GiB): the card's size is what bounds this process" \
			err "$args: what holds is said"
		[ "$(wc -l <err)" -eq 1 ] || fail "$args: not one line: $(cat err)"
	done
fi

"$V" run --limit 1G --spill=1000T -- true 2>err
expect_rc 0 $? "--spill beyond the host's memory"
expect_grep "vramctl: --spill=1000T is more than this host's available memory" err \
	"a spill budget past the host's memory is said"
grep -q "at most .* can be served from host memory" err || fail "what holds is not said: $(cat err)"
finish
