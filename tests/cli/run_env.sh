# The environment `vramctl run` gives the command: the contract variables,
# LD_PRELOAD appended (never overwritten, never doubled) and --growth's
# framework switches (the user's own values kept).
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G,8G
UUID1=GPU-66666666-7777-8888-9999-aaaaaaaaaaaa
export VRAMSIM_UUIDS=GPU-11111111-2222-3333-4444-555555555555,$UUID1
env_of() { # env_of VAR vramctl-run-args... : prints VAR as the command saw it
	local var=$1
	shift
	"$V" run "$@" -- sh -c "printf '%s' \"\${$var-<unset>}\""
}

# LD_PRELOAD: set alone, appended, kept once. The user's own preload is a
# harmless library; in sanitizer builds the sanitizer's runtime, which must
# come first in the process anyway.
pre=$(ldd "$LIB" | awk '/lib(a|t)san/ { print $3; exit }')
pre=${pre:-libm.so.6}
got=$(env_of LD_PRELOAD --limit 1G)
[ "$got" = "$LIB" ] || fail "LD_PRELOAD alone: '$got', expected '$LIB'"
got=$(LD_PRELOAD=$pre env_of LD_PRELOAD --limit 1G)
[ "$got" = "$pre:$LIB" ] || fail "LD_PRELOAD appended: '$got'"
got=$(LD_PRELOAD="$pre $LIB" env_of LD_PRELOAD --limit 1G)
[ "$got" = "$pre $LIB" ] || fail "LD_PRELOAD not doubled: '$got'"
# A nested run adds nothing either.
got=$("$V" run --limit 1G -- "$V" run --limit 512M -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$got" = "$LIB" ] || fail "nested run doubled LD_PRELOAD: '$got'"
# VRAMCTL_LIBRARY names another copy of the library.
cp "$LIB" "$PWD/libvramctl.so"
got=$(VRAMCTL_LIBRARY=$PWD/libvramctl.so env_of LD_PRELOAD --limit 1G)
[ "$got" = "$PWD/libvramctl.so" ] || fail "VRAMCTL_LIBRARY: '$got'"
VRAMCTL_LIBRARY=$PWD/missing.so "$V" run --limit 1G -- touch marker 2>err
expect_rc 125 $? "VRAMCTL_LIBRARY missing"
[ ! -e marker ] || fail "ran without its library"

# VRAMCTL_LIMIT, normalised: bytes or percent; devices by UUID.
got=$(env_of VRAMCTL_LIMIT --limit 1.5G)
[ "$got" = 1536M ] || fail "VRAMCTL_LIMIT for 1.5G: '$got'"
got=$(env_of VRAMCTL_LIMIT --limit 512MiB)
[ "$got" = 512M ] || fail "VRAMCTL_LIMIT for 512MiB: '$got'"
# What the CLI writes, the library reads back exactly: no exponent, no
# rounding up to 100%.
for pct in 0.00001% 99.999999999% 33.333333333%; do
	got=$(env_of VRAMCTL_LIMIT --limit $pct)
	[ "$got" = $pct ] || fail "VRAMCTL_LIMIT for $pct: '$got'"
	if has_cap; then
		VRAMCTL_LOG=info "$V" run --limit $pct -- "$VR_BUILD/libexec/vramctl-demo-app" \
			>out 2>&1
		expect_grep "vramctl: cap $pct" out "the library read $pct"
		! grep -q "fail closed" out || fail "the library refused $pct: $(cat out)"
	fi
done
# VRAMCTL_DRIVER naming a driver that is not the program's (here: none):
# the program, which reaches the driver through dlopen + dlsym, never runs
# uncapped, and is told why.
if has_cap; then
	VRAMCTL_DRIVER=$PWD/missing/libcuda.so.1 "$V" run --limit 1G -- \
		"$VR_BUILD/libexec/vramctl-demo-app" >out 2>&1
	rc=$?
	[ "$rc" != 0 ] || fail "a program with another driver than VRAMCTL_DRIVER's ran: $(cat out)"
	expect_grep "(fail closed)" out "another driver than VRAMCTL_DRIVER's"
	! grep -q "GPU 0 has" out || fail "the program saw the device uncapped: $(cat out)"
fi
"$V" run --limit 0.0000000001% -- true 2>err
expect_rc 125 $? "a percentage with 10 decimals"
expect_grep "at most 9 digits after the point" err "a percentage with 10 decimals"
if sim_only; then
	got=$(env_of VRAMCTL_LIMIT --limit 1=25%,2G)
	[ "$got" = "$UUID1=25%,2G" ] || fail "VRAMCTL_LIMIT for 1=25%,2G: '$got'"
	# CUDA_VISIBLE_DEVICES renumbers: device 0 is now the second card.
	got=$(CUDA_VISIBLE_DEVICES=1 env_of VRAMCTL_LIMIT --limit 0=1G)
	[ "$got" = "$UUID1=1G" ] || fail "index after CUDA_VISIBLE_DEVICES: '$got'"
	CUDA_VISIBLE_DEVICES=1 "$V" run --limit 1=1G -- true 2>err
	expect_rc 125 $? "device 1 hidden by CUDA_VISIBLE_DEVICES"
	# The cap follows the physical GPU into a child that renumbers it.
	if has_cap; then
		"$V" run --limit 1=2G -- env CUDA_VISIBLE_DEVICES=1 \
			"$VR_BUILD/libexec/vramctl-demo-app" >out 2>&1
		expect_grep "GPU 0 has 2 GiB in total" out "cap of device 1 seen as device 0"
	fi
fi

# VRAMCTL_GROUP: a new group per run, or the one named.
g1=$(env_of VRAMCTL_GROUP --limit 1G)
g2=$(env_of VRAMCTL_GROUP --limit 1G)
case $g1 in run-*) ;; *) fail "unique group name: '$g1'" ;; esac
[ "$g1" != "$g2" ] || fail "two runs shared the group '$g1'"
got=$(env_of VRAMCTL_GROUP --group job.42 --limit 1G)
[ "$got" = job.42 ] || fail "--group job.42: '$got'"
"$V" run --group job.42 -- true 2>err
expect_rc 125 $? "--group without --limit"

# Without --limit nothing of the contract is added.
got=$(env_of VRAMCTL_LIMIT)
[ "$got" = "<unset>" ] || fail "VRAMCTL_LIMIT without --limit: '$got'"

# --growth: the frameworks' switches, unless the user set them.
got=$(env_of TF_FORCE_GPU_ALLOW_GROWTH --limit 1G --growth)
[ "$got" = true ] || fail "TF_FORCE_GPU_ALLOW_GROWTH: '$got'"
got=$(env_of XLA_PYTHON_CLIENT_PREALLOCATE --limit 1G --growth)
[ "$got" = false ] || fail "XLA_PYTHON_CLIENT_PREALLOCATE: '$got'"
got=$(env_of VRAMCTL_GROWTH --growth --limit 1G)
[ "$got" = 1 ] || fail "VRAMCTL_GROWTH: '$got'"
got=$(TF_FORCE_GPU_ALLOW_GROWTH=false env_of TF_FORCE_GPU_ALLOW_GROWTH --limit 1G --growth)
[ "$got" = false ] || fail "the user's TF_FORCE_GPU_ALLOW_GROWTH was replaced: '$got'"
got=$(XLA_PYTHON_CLIENT_PREALLOCATE=true env_of XLA_PYTHON_CLIENT_PREALLOCATE --growth --limit 1G)
[ "$got" = true ] || fail "the user's XLA_PYTHON_CLIENT_PREALLOCATE was replaced: '$got'"
got=$(env_of TF_FORCE_GPU_ALLOW_GROWTH --limit 1G)
[ "$got" = "<unset>" ] || fail "growth switch set without --growth: '$got'"

# VRAMCTL_GUARANTEE (issue #26): normalised as the cap is; an inherited one
# never applies to a new cap.
got=$(env_of VRAMCTL_GUARANTEE --limit 4G --guarantee 1.5G)
[ "$got" = 1536M ] || fail "VRAMCTL_GUARANTEE for 1.5G: '$got'"
got=$(env_of VRAMCTL_GUARANTEE --limit 50% --guarantee 12.5%)
[ "$got" = 12.5% ] || fail "VRAMCTL_GUARANTEE for 12.5%: '$got'"
got=$(VRAMCTL_GUARANTEE=2G env_of VRAMCTL_GUARANTEE --limit 4G)
[ "$got" = "<unset>" ] || fail "an inherited VRAMCTL_GUARANTEE under a new cap: '$got'"
if sim_only; then
	got=$(env_of VRAMCTL_GUARANTEE --limit 4G --guarantee 1=1G)
	[ "$got" = "$UUID1=1G" ] || fail "VRAMCTL_GUARANTEE for 1=1G: '$got'"
fi
finish
