# Every bad form of --limit: a message naming the bad text, exit 125, and the
# command never ran (its marker file is not created).
. "$VR_SRC/tests/cli/common.bash"
export VRAMSIM_DEVICES=16G,8G
UUID0=GPU-11111111-2222-3333-4444-555555555555
export VRAMSIM_UUIDS=$UUID0,GPU-66666666-7777-8888-9999-aaaaaaaaaaaa

# bad SPEC | text the message must name
cases=(
	"0|'0'"
	"0G|'0G'"
	"0%|'0%'"
	"-1G|'-1G'"
	"|empty"
	"4X|unknown unit 'X'"
	"4GiBs|unknown unit 'GiBs'"
	"12.5.3G|'12.5.3G'"
	"99999999999999999999|'99999999999999999999'"
	"20000000T|'20000000T'"
	"101%|'101%'"
	"100.5%|'100.5%'"
	"-5%|'-5%'"
	"1G,,2G|empty"
	"foo=1G|'foo'"
	"7=1G|unknown device '7'"
	"5=1G|unknown device '5'"
	"GPU-deadbeef=1G|unknown device 'GPU-deadbeef'"
	"GPU-00000000-0000-0000-0000-000000000000=1G|unknown device 'GPU-00000000-0000-0000-0000-000000000000'"
	"0=1G,0=2G|'0=2G'"
	"1G,2G|every device"
)
i=0
for c in "${cases[@]}"; do
	spec=${c%%|*} want=${c#*|}
	# Device indices and UUIDs need the simulator's known devices.
	case $spec in
	[0-9]=* | GPU-*) sim_only || continue ;;
	esac
	i=$((i + 1))
	rm -f marker
	"$V" run --limit "$spec" -- touch marker >out 2>err
	rc=$?
	expect_rc 125 $rc "--limit '$spec'"
	expect_grep "$want" err "--limit '$spec'"
	[ "$(wc -l <err)" -le 2 ] || fail "--limit '$spec': more than one error: $(cat err)"
	[ ! -e marker ] || fail "--limit '$spec': the command ran"
done

# The same device twice across repeated options, and by index and UUID.
rm -f marker
"$V" run --limit 0=1G --limit 0=2G -- touch marker 2>err
expect_rc 125 $? "repeated --limit 0="
expect_grep "device '0' given twice" err "repeated --limit 0="
if sim_only; then
	"$V" run --limit 0=1G,$UUID0=2G -- touch marker 2>err
	expect_rc 125 $? "index and UUID of one device"
	expect_grep "device 0 named twice" err "index and UUID of one device"
	# The UUID compares case-insensitively.
	"$V" run --limit "0=1G,$(echo $UUID0 | tr a-z A-Z)=2G" -- touch marker 2>err
	expect_rc 125 $? "upper-case UUID of the same device"
fi
[ ! -e marker ] || fail "a refused run ran its command"

# Option errors are vramctl's too.
"$V" run --bogus -- touch marker 2>err
expect_rc 125 $? "unknown option"
expect_grep "'--bogus'" err "unknown option"
"$V" run --limit 2>err
expect_rc 125 $? "--limit without a value"
"$V" run --limit 1G 2>err
expect_rc 125 $? "no command"
"$V" run --group 'bad/name' --limit 1G -- touch marker 2>err
expect_rc 125 $? "bad group name"
expect_grep "'bad/name'" err "bad group name"
[ ! -e marker ] || fail "a refused run ran its command"

# No driver can be loaded: a cap for every device still runs (the library
# applies it once the program loads a driver); a device cannot be checked,
# so an item naming one is refused.
rm -f marker
VRAMCTL_DRIVER=$PWD/no-such-driver.so "$V" run --limit 0=1G -- touch marker 2>err
expect_rc 125 $? "a device without a driver"
expect_grep "cannot check device '0'" err "a device without a driver"
[ ! -e marker ] || fail "a device without a driver: the command ran"
VRAMCTL_DRIVER=$PWD/no-such-driver.so "$V" run --limit 1G -- touch marker 2>err
expect_rc 0 $? "a cap for every device without a driver"
[ -e marker ] || fail "a cap for every device without a driver did not run: $(cat err)"

# Good specs do run (so the checks above are not vacuous).
for spec in 1G 1.5g 512MiB 50% 0=1G 0=4G,1=50% 100%; do
	case $spec in *1=*) sim_only || continue ;; esac
	rm -f marker
	"$V" run --limit "$spec" -- touch marker 2>err
	expect_rc 0 $? "--limit '$spec'"
	[ -e marker ] || fail "--limit '$spec': the command did not run: $(cat err)"
done

# --guarantee (issue #26): the cap's grammar and messages, within the cap on
# every device it names, and never without a cap. Each refused, 125, the
# command not run.
gcases=(
	"--limit 4G --guarantee 0G|--guarantee '0G'"
	"--limit 4G --guarantee 4X|unknown unit 'X'"
	"--limit 4G --guarantee 1G,2G|--guarantee '1G,2G': '2G'"
	"--limit 4G --guarantee 5G|is above"
	"--limit 50% --guarantee 60%|is above"
	"--guarantee 1G|--guarantee needs --limit"
)
if sim_only; then
	gcases+=(
		"--limit 4G --guarantee 7=1G|unknown device '7'"
		"--limit 0=4G --guarantee 2G|GPU 1 has a guarantee"
		"--limit 4G,1=1G --guarantee 2G|the guarantee on GPU 1 (2 GiB) is above its cap (1 GiB)"
		"--limit 4G --guarantee 1=60%|the guarantee on GPU 1 (4.8 GiB) is above its cap (4 GiB)"
	)
fi
for c in "${gcases[@]}"; do
	args=${c%%|*} want=${c#*|}
	rm -f marker
	# shellcheck disable=SC2086 # the options, as words
	"$V" run $args -- touch marker >out 2>err
	expect_rc 125 $? "$args"
	expect_grep "$want" err "$args"
	[ "$(wc -l <err)" -le 2 ] || fail "$args: more than one error: $(cat err)"
	[ ! -e marker ] || fail "$args: the command ran"
done
# Without a driver, item by item: a guarantee item needs a cap item there,
# and is compared with it when both are sizes or both percentages.
rm -f marker
VRAMCTL_DRIVER=$PWD/no-such-driver.so "$V" run --limit 1G --guarantee 2G -- touch marker 2>err
expect_rc 125 $? "a guarantee above the cap without a driver"
expect_grep "the guarantee 2G is above the cap there (1G)" err "no driver, 2G over 1G"
VRAMCTL_DRIVER=$PWD/no-such-driver.so "$V" run --limit 1G --guarantee 512M -- touch marker 2>err
expect_rc 0 $? "a guarantee within the cap without a driver"
[ -e marker ] || fail "a guarantee within the cap without a driver did not run: $(cat err)"
# Good guarantees run.
for args in "--limit 4G --guarantee 4G" "--limit 50% --guarantee 2G" \
	"--limit 4G --guarantee 25%" "--limit 4G --guarantee 1=50%"; do
	rm -f marker
	# shellcheck disable=SC2086
	"$V" run $args -- touch marker 2>err
	expect_rc 0 $? "$args"
	[ -e marker ] || fail "$args: the command did not run: $(cat err)"
done
finish
