# messages.sh - messages that name what they are about (#35, Low): a
# guarantee of 0 is said as a guarantee, not a cap; `limit` of a PID with
# no process says so; run's usage names every option; a configuration whose
# default cap is above its enforced maximum is a doctor warning; doctor's
# line on groups that ended is its own clause ("registry; 1 door", never
# "registry1 door"); `demo --real` on vramctl's simulator says so instead of
# claiming real allocations.
. "$VR_SRC/tests/cli/common.bash"
"$V" run --limit 1G --guarantee 0 -- true 2>err
expect_rc 125 $? "--guarantee 0"
expect_grep "vramctl: --guarantee '0': a guarantee must be more than zero bytes" err "said as a guarantee"
grep -q "a cap must be" err && fail "--guarantee 0 said as a cap: $(cat err)"
"$V" limit 999999999 1G 2>err
expect_rc 125 $? "limit of no process"
expect_grep "vramctl: limit: no process 999999999" err "no process"
"$V" run --help >out
for opt in --enforce --report --stacks --trace --trace-max; do
	sed -n '1,/^$/p' out | grep -q -- "$opt" || fail "run's usage lacks $opt: $(sed -n '1,/^$/p' out)"
done
sim_only || finish
printf 'default_limit = 8G\nmax_limit = 4G\n' >c.conf
VRAMCTL_CONFIG=$PWD/c.conf "$V" doctor >out 2>&1
grep -E "^WARN +config.site +GPU 0: default_limit \(8 GiB\) is above the enforced max_limit \(4 GiB\)" out >/dev/null ||
	fail "doctor: default_limit above max_limit: $(grep config out)"
"$V" run --limit 1G --group ended1 -- true 2>/dev/null
"$V" doctor >out 2>&1
expect_grep "no live group in the registry; 1 door of groups that ended (ended1)" out \
	"doctor: groups that ended, a clause of their own"
"$V" demo --real >out 2>&1
expect_rc 0 $? "demo --real on the simulator"
expect_grep "which is vramctl's simulator" out "demo --real names the simulator"
grep -q "really allocates" out && fail "demo --real claims real allocations: $(head -2 out)"
finish
