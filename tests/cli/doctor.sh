# doctor.sh - `vramctl doctor` on the simulated GPU put into each state it
# knows: a healthy machine (every check OK), then one bad state at a time,
# each with its expected line and exit status; the self-test failing when a
# preloaded library breaks some ways into the driver; bad input (exit 2).
. "$VR_SRC/tests/cli/common.bash"
. "$VR_SRC/tests/monitor/lib.bash"
# The self-test program is built with this build's flags, so the library
# of this build (not common.bash's TSan stand-in) is the one to load.
unset VRAMCTL_LIBRARY
FAKE=$VR_BUILD/tests/cli/libfakevgpu.so

# doctor ARG...: runs it, output in out (stdout) and err; sets rc.
doctor() {
	"$V" doctor "$@" >out 2>err
	rc=$?
}

# line STATUS ID TEXT WHAT: out has a line "STATUS ID ...TEXT..."
line() {
	grep -E "^$1 +$2 " out | grep -qF -- "$3" ||
		{ fail "$4: no '$1 $2 ... $3' line:"; sed 's/^/      /' out >&2; }
}

# only_ok WHAT: every check OK
only_ok() {
	if grep -vE '^(OK  |$)' out | grep -qvE '^ok: 0 failed, 0 warnings, [0-9]+ ok, 0 skipped$'; then
		fail "$1: not all OK:"
		sed 's/^/      /' out >&2
	fi
}

# ---- bad input: holds on any driver ----
# Usage errors: one line and 125, as every command (usage_errors.sh).
doctor --bogus
expect_rc 125 "$rc" "unknown flag"
expect_grep "unknown option '--bogus' ('vramctl doctor --help')" err "unknown flag: message"
doctor --device
expect_rc 125 "$rc" "--device without a value"
doctor --device x
expect_rc 125 "$rc" "--device x"
expect_grep "bad --device 'x'" err "--device x: message"
doctor --device -1
expect_rc 125 "$rc" "--device -1"
doctor extra
expect_rc 125 "$rc" "an extra argument"
expect_grep "unexpected argument 'extra'" err "extra argument: message"
doctor --help
expect_rc 0 "$rc" "--help"
expect_grep "Exit status: 0 nothing failed" out "--help text"

sim_only || { echo "the rest needs the simulator's controls"; finish; }
require_sim
unset VRAMSIM_DEVICES VRAMSIM_DEVICE_FAIL VRAMSIM_COMPUTE_MODE VRAMSIM_MIG \
	VRAMSIM_PERSISTENCE VRAMSIM_KERNEL_RELEASE VRAMSIM_DRIVER_RELEASE \
	VRAMSIM_DRIVER_VERSION CUDA_VISIBLE_DEVICES VRAMCTL_DRIVER VRAMCTL_NVML
# The machine files doctor reads, redirected (the build machines have no
# NVIDIA kernel module; /etc/ld.so.preload is the machine's own business).
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07  Fri Aug  1 00:00:00 UTC 2025\nGCC version:  gcc version 12.2.0\n' >kernel-ok
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.51.03  Release Build\n' >kernel-old
: >preload-none
export VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE=$PWD/kernel-ok VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-none

doctor --device 1
expect_rc 2 "$rc" "--device past the last GPU"
expect_grep "--device 1: there is 1 GPU (0 to 0)" err "--device out of range: message"
[ ! -s out ] || fail "--device out of range printed a report"

# ---- healthy ----
doctor --program "$HOLDER"
expect_rc 0 "$rc" "healthy"
only_ok "healthy"
for id in driver.library driver.version driver.init driver.checkpoint driver.nvml driver.kernel \
	driver.platform device.init device.compute_mode device.mig device.persistence \
	env.visible_devices hook.library hook.preload hook.linked hook.dlsym hook.procaddr \
	hook.procaddr_old hook.ptds hook.program books.dir books.groups books.dead books.damage \
	config.site kernel.stale gpu.uncapped gpu.overcommit; do
	grep -qE "^OK +$id " out || fail "healthy: no OK line for $id"
done
line OK driver.kernel "kernel module 580.82.07" "healthy kernel module"
line OK driver.checkpoint "the driver has the checkpoint API" "healthy: the checkpoint API (#36)"
line OK hook.ptds "capped (sees the 64 MiB test cap" "healthy per-thread way"
# A driver before CUDA 12.8 has no checkpoint API: parking is off, said as
# SKIP (caps and --wait do not need it).
if [ -e "$VR_BUILD/sim/cuda-11.5/libcuda.so.1" ]; then
	LD_LIBRARY_PATH=$VR_BUILD/sim/cuda-11.5:$LD_LIBRARY_PATH VRAMSIM_DRIVER_VERSION=11050 doctor
	line SKIP driver.checkpoint "the driver has no checkpoint API (cuCheckpointProcessLock" \
		"a driver without the checkpoint API (#36)"
fi
doctor --json --program "$HOLDER"
expect_rc 0 "$rc" "healthy --json"
expect_grep '"schema": 1,' out "json schema"
expect_grep '"result": "ok",' out "json result"
expect_grep '"exit_status": 0,' out "json exit status"
grep -A3 '"id": "hook.dlsym",' out | tr -d ' \n' |
	grep -qF '"id":"hook.dlsym","device":0,"status":"ok","fact":' || fail "json check"
expect_grep '"fix": null' out "json fix null"
# Valid JSON, also with quotes, backslashes and control characters in a fact.
if command -v python3 >/dev/null; then
	python3 -m json.tool <out >/dev/null || fail "healthy --json is not valid JSON"
	CUDA_VISIBLE_DEVICES=$'"x\\\t,0' doctor --json
	expect_rc 1 "$rc" "--json with odd characters in CUDA_VISIBLE_DEVICES"
	python3 -c 'import json, sys
d = json.load(sys.stdin)
c = [c for c in d["checks"] if c["id"] == "env.visible_devices"][0]
assert c["status"] == "fail" and "\"x\\\t" in c["fact"], c
assert d["result"] == "fail" and d["exit_status"] == 1 and d["counts"]["fail"] >= 1, d
assert all(set(c) == {"id", "device", "status", "fact", "fix"} for c in d["checks"])' <out ||
		fail "--json with odd characters: not the expected JSON"
else
	echo "note: python3 not found, JSON validity not checked"
fi
ls "$TMPDIR" | grep -q vramctl-doctor && fail "the self-test left its directory in TMPDIR"
ls "$VRAMCTL_REGISTRY_DIR" | grep -q . && fail "doctor wrote into the registry"

# ---- the driver ----
VRAMCTL_DRIVER=$TMPDIR/none/libcuda.so.1 doctor
expect_rc 1 "$rc" "missing driver"
line FAIL driver.library "cannot load the CUDA driver" "missing driver"
line SKIP device.init "the driver is not usable" "missing driver: devices"
line SKIP hook.selftest "not run" "missing driver: self-test"

VRAMCTL_NVML=$TMPDIR/none/libnvidia-ml.so.1 doctor
expect_rc 0 "$rc" "no NVML"
line WARN driver.nvml "NVML not found" "no NVML"
line SKIP gpu.uncapped "needs NVML" "no NVML: picture"
line OK hook.dlsym "capped" "no NVML: the self-test still runs"

VRAMSIM_FAULT=nvmlInit_v2:1+:NVML_ERROR_DRIVER_NOT_LOADED doctor
expect_rc 0 "$rc" "NVML fails to initialise"
line WARN driver.nvml "NVML failed to initialise" "NVML fails to initialise"

VRAMSIM_KERNEL_RELEASE=575.51.03 VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE=$PWD/kernel-old doctor
expect_rc 1 "$rc" "kernel/user mismatch"
line FAIL driver.init "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)" "mismatch: cuInit"
line FAIL driver.kernel "kernel module 575.51.03" "mismatch: kernel line"
line FAIL driver.kernel "Driver/library version mismatch" "mismatch: kernel line"
line WARN driver.nvml "NVML/RM version mismatch" "mismatch: NVML"
grep -qE '^ +fix: reboot' out || fail "mismatch: no reboot fix"

# cuInit's errors with a known cause, each explained.
for c in "100:no CUDA GPU is visible" "802:fabric manager" "804:forward-compatibility" \
	"34:the CUDA toolkit's stub" "999:the driver failed to initialise"; do
	VRAMSIM_FAULT=cuInit:1+:${c%%:*} doctor
	expect_rc 1 "$rc" "cuInit error ${c%%:*}"
	line FAIL driver.init "(${c%%:*}): " "cuInit error ${c%%:*}: code"
	line FAIL driver.init "${c#*:}" "cuInit error ${c%%:*}: explained"
done
line FAIL driver.init "CUDA_ERROR_UNKNOWN (999)" "cuInit error named by the driver"

VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE=$PWD/kernel-old doctor
expect_rc 1 "$rc" "kernel file differs from NVML's release"
line FAIL driver.kernel "kernel module 575.51.03 ($PWD/kernel-old) but user-space libraries 580.82.07 (NVML)" "file mismatch"

VRAMCTL_DOCTOR_NVIDIA_VERSION_FILE=$TMPDIR/none doctor
expect_rc 0 "$rc" "no kernel version file"
line SKIP driver.kernel "$TMPDIR/none" "no kernel version file"

VRAMSIM_DRIVER_VERSION=11080 doctor
expect_rc 0 "$rc" "old driver"
line WARN driver.version "the driver supports CUDA 11.8" "old driver"
line SKIP hook.procaddr "needs a CUDA 12 driver" "old driver: cuGetProcAddress_v2"
line OK hook.procaddr_old "capped" "old driver: cuGetProcAddress"

# ---- the devices ----
VRAMSIM_COMPUTE_MODE=exclusive_process doctor
expect_rc 0 "$rc" "exclusive-process mode"
line WARN device.compute_mode "GPU 0: compute mode exclusive-process" "exclusive mode"
grep -qF "fix: sudo nvidia-smi -i 0 -c DEFAULT" out || fail "exclusive mode: fix"
VRAMSIM_COMPUTE_MODE=prohibited doctor
expect_rc 1 "$rc" "prohibited mode"
line FAIL device.compute_mode "prohibited" "prohibited mode"

# Busy in exclusive-process mode: the context cannot be created.
VRAMSIM_COMPUTE_MODE=exclusive_process VRAMSIM_FAULT=cuDevicePrimaryCtxRetain:1:46 doctor
expect_rc 1 "$rc" "a busy exclusive-process GPU"
line FAIL device.init "is busy: CUDA_ERROR_DEVICES_UNAVAILABLE (46)" "busy GPU"

VRAMSIM_MIG=1 doctor
expect_rc 0 "$rc" "MIG on"
line WARN device.mig "GPU 0: MIG mode is on" "MIG on"

VRAMSIM_PERSISTENCE=0 doctor
expect_rc 0 "$rc" "persistence off"
line WARN device.persistence "persistence mode is off" "persistence off"

VRAMSIM_DEVICES=16G,8G VRAMSIM_DEVICE_FAIL=1 doctor
expect_rc 1 "$rc" "a device that fails to initialise"
line OK device.init "GPU 0: NVIDIA Simulated GPU 16GB" "failing device: GPU 0"
line FAIL device.init "GPU 1 (NVIDIA Simulated GPU 8GB" "failing device: GPU 1"
line FAIL device.init "CUDA_ERROR_UNKNOWN (999)" "failing device: error"
line SKIP device.modes "GPU 1: NVML cannot open it (Unknown Error)" "failing device: NVML"
VRAMSIM_DEVICES=16G,8G VRAMSIM_DEVICE_FAIL=1 doctor --device 0
expect_rc 0 "$rc" "a failing GPU 1 with --device 0"
grep -qE "GPU 1([^0-9]|$)" out && fail "--device 0 looked at GPU 1"
VRAMSIM_DEVICES=16G,8G doctor --device 1
expect_rc 0 "$rc" "--device 1 of two"
line OK hook.linked "capped" "--device 1: self-test"
VRAMSIM_DEVICES=16G,8G "$V" doctor --json --device 1 | grep -A2 '"id": "hook.linked",' | tr -d ' \n' |
	grep -qF '"device":1,"status":"ok"' ||
	fail "--device 1: JSON names the device"

CUDA_VISIBLE_DEVICES= doctor
expect_rc 1 "$rc" "an empty CUDA_VISIBLE_DEVICES"
line FAIL env.visible_devices "set but empty: it hides every GPU" "empty CUDA_VISIBLE_DEVICES"
VRAMSIM_DEVICES=16G,8G CUDA_VISIBLE_DEVICES=1,5 doctor
expect_rc 0 "$rc" "CUDA_VISIBLE_DEVICES naming a missing GPU after a good one"
line WARN env.visible_devices 'entry "5" names no GPU' "CUDA_VISIBLE_DEVICES=1,5"

# ---- the interception ----
LD_PRELOAD=$FAKE doctor
expect_rc 1 "$rc" "a conflicting preload"
line FAIL hook.preload "LD_PRELOAD names $FAKE, which also replaces dlsym" "conflicting preload"
line OK hook.linked "capped" "conflicting preload: linked calls stay capped"
for way in dlsym procaddr procaddr_old ptds; do
	line FAIL "hook.$way" "NOT capped: cuMemGetInfo_v2 reports 16384.0 MiB in total" \
		"conflicting preload breaks $way"
done
# The loader's "cannot be preloaded" line comes first in the test program's
# output ("...preloaded..." must not pass for its "loaded" line).
LD_PRELOAD=$TMPDIR/none/libmissing.so doctor
expect_rc 0 "$rc" "a missing library in LD_PRELOAD"
line OK hook.dlsym "capped" "missing preload: the self-test still reads its lines"
# vramctl's own library under another name is no conflict.
cp "$LIB" renamed-vramctl.so
echo "$PWD/renamed-vramctl.so" >preload-own
VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-own doctor
line OK hook.preload "$PWD/preload-own: 1 entry)" "vramctl's own library renamed in the preload file"
# The machine's preload (vramctl preload): said either way, never a fault.
mkdir -p older && cp "$LIB" older/libvramctl.so && echo "$PWD/older/libvramctl.so" >preload-older
VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-older doctor
line OK hook.machine "names another vramctl library than $(readlink -f "$LIB")" "another library named"
echo "$(readlink -f "$LIB")" >preload-on
VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-on doctor
line OK hook.machine "names the library: every program that uses the driver loads it" "the machine's preload on"
VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-none doctor
line OK hook.machine "does not name the library" "the machine's preload off"
echo "$FAKE" >preload-fake
VRAMCTL_DOCTOR_PRELOAD_FILE=$PWD/preload-fake doctor
expect_rc 1 "$rc" "a conflicting /etc/ld.so.preload"
line FAIL hook.preload "$PWD/preload-fake names $FAKE" "conflicting preload file"

mkdir -p stand-in
cp "$(ldconfig -p | awk '/libm\.so\.6 / { print $NF; exit }')" stand-in/libvramctl.so
VRAMCTL_LIBRARY=$PWD/stand-in/libvramctl.so doctor
expect_rc 1 "$rc" "a library that is not vramctl's"
line FAIL hook.dlsym "libvramctl.so was not loaded into the test program" "stand-in library"

# A vramctl installed without its test program.
mkdir -p lone && cp "$V" lone/vramctl
VRAMCTL_LIBRARY=$LIB lone/vramctl doctor >out 2>err
expect_rc 1 "$?" "no test program beside vramctl"
line FAIL hook.selftest "the test program vramctl-doctor-probe is not installed" "no test program"

cp "$HOLDER" setuid-prog && chmod 4755 setuid-prog
doctor --program "$PWD/setuid-prog"
expect_rc 1 "$rc" "a setuid program"
line FAIL hook.program "set-user-ID or set-group-ID" "setuid program"
VRAMSIM_DRIVER_VERSION=11080 doctor --program "$VR_BUILD/tests/cli/cudart12-prog"
expect_rc 1 "$rc" "a program linking a newer CUDA runtime than the driver"
line FAIL hook.program "links the CUDA 12 runtime (libcudart.so.12), but the driver supports CUDA 11.8" \
	"program needs a newer driver"
doctor --program "$VR_BUILD/tests/cli/cudart12-prog"
expect_rc 0 "$rc" "a program linking the CUDA 12 runtime on a CUDA 13 driver"
line OK hook.program "it links the CUDA 12 runtime" "program's runtime fits"
doctor --program sh
expect_rc 0 "$rc" "a program found in PATH"
line OK hook.program "dynamically linked" "program in PATH"
doctor --program "$TMPDIR/none"
expect_rc 1 "$rc" "a missing program"
line FAIL hook.program "No such file or directory" "missing program"

# ---- the books ----
mkdir -m 0777 open-dir && chmod 0777 open-dir
VRAMCTL_REGISTRY_DIR=$PWD/open-dir doctor
expect_rc 1 "$rc" "a world-writable registry directory"
line FAIL books.dir "readable or writable by other users (mode 0777" "unsafe registry directory"
grep -qF "fix: if it is yours: chmod 700 $PWD/open-dir" out || fail "unsafe registry: fix"
mkdir -m 0755 readable-dir && chmod 0755 readable-dir
doctor --registry "$PWD/readable-dir"
expect_rc 1 "$rc" "a registry directory others can read"
line FAIL books.dir "readable or writable by other users (mode 0755" "readable registry directory"

"$V" run --group stale-one --limit 1G -- true || fail "vramctl run for a stale group"
"$V" run --group stale-two --limit 1G -- true || fail "vramctl run for a stale group"
doctor
expect_rc 0 "$rc" "doors of ended groups"
# A door left by a group whose last member left holds nothing: normal use,
# said as OK, with no rm to run (#25).
line OK books.groups "2 doors of groups that ended (stale-one, stale-two)" "doors of ended groups"
grep -q "WARN" out && fail "doors of ended groups: a WARN: $(grep WARN out)"
grep -qF "rm $VRAMCTL_REGISTRY_DIR" out && fail "doors of ended groups: an rm to run"
rm -f "$VRAMCTL_REGISTRY_DIR"/*.vrg

# Damaged books of a live group: doctor says what status and the members
# see, by file (#29).
POKE=$VR_BUILD/tests/cli/regpoke
mkfifo ready release
"$V" run --group dmg --limit 1G -- sh -c 'echo up >ready; read -r _ <release' &
dmg=$!
read -r _ <ready
"$POKE" "$VRAMCTL_REGISTRY_DIR" dmg lock 0xdeadbeef || fail "poke lock"
doctor
expect_rc 1 "$rc" "a lock held by no member"
line FAIL books.damage "$VRAMCTL_REGISTRY_DIR/dmg.vrg: the group's lock is held by something that is not a live member" "held lock"
"$POKE" "$VRAMCTL_REGISTRY_DIR" dmg cap 0xffffffffffffffff || fail "poke cap"
doctor
expect_rc 1 "$rc" "a forged cap"
line FAIL books.damage "1 group's books are damaged" "forged cap: one group"
line FAIL books.damage "a device's cap, UUID or total was overwritten" "forged cap"
echo go >release
wait $dmg
rm -f "$VRAMCTL_REGISTRY_DIR"/*.vrg

# A thousand forged members (records with PIDs nobody has): doctor says so,
# as status lists them dead (#29: it said OK).
mkfifo ready2 release2
"$V" run --group forged --limit 1G -- sh -c 'echo up >ready2; read -r _ <release2' &
fpid=$!
read -r _ <ready2
"$POKE" "$VRAMCTL_REGISTRY_DIR" forged members 1000 || fail "poke members"
doctor
line WARN books.dead "1 group with 32 or more records of members that are not running (forged (1000))" "forged members"
"$V" status --json >forged.json 2>/dev/null
grep -q '"dead_members": 1000' forged.json || fail "forged members: status does not count them"
echo go >release2
wait $fpid
rm -f "$VRAMCTL_REGISTRY_DIR"/*.vrg

# ---- the picture ----
start_holder free -- 1024
doctor
expect_rc 0 "$rc" "an uncapped holder"
line WARN gpu.uncapped "1 process holds GPU memory outside any cap: pid $HPID_free" "uncapped holder"
stop_holder free

# A command line with escape sequences never reaches the terminal raw.
evil=$PWD/$'ev\e[2Jil'
cp "$HOLDER" "$evil"
HOLDER=$evil start_holder esc -- 64
doctor
grep -q $'\e' out && fail "an escape sequence reached doctor's output"
line WARN gpu.uncapped 'ev\x1b[2Jil' "escaped command line"
stop_holder esc

HOLD_PREFIX="$V run --group big-a --limit 10G --" start_holder a -- 100
HOLD_PREFIX="$V run --group big-b --limit 10G --" start_holder b -- 100
doctor
expect_rc 0 "$rc" "overcommitted caps"
line WARN gpu.overcommit "GPU 0: 2 caps add up to 20 GiB of 16 GiB" "overcommit"
line OK gpu.uncapped "no process holds GPU memory outside a cap" "capped holders are not uncapped"
stop_holder a
stop_holder b
finish
