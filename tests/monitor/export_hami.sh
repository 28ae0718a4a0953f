#!/usr/bin/env bash
# export_hami - `vramctl export --hami` scraped over HTTP: beside vramctl's
# own series, HAMi's node-monitor names and labels (hami_vgpu_memory_*,
# vGPU_device_memory_*, hami_host_gpu_memory_used_bytes, HostGPUMemoryUsage)
# for a capped program whose environment names its pod and container
# (VRAMCTL_POD_NAMESPACE, VRAMCTL_POD_NAME, VRAMCTL_CONTAINER_NAME, read
# from /proc/PID/environ), the node from $NODE_NAME; vramctl's per-process
# series carry the same names as labels; a program without a pod is not in
# HAMi's series; without --hami none of them is served.
. "$VR_SRC/tests/monitor/lib.bash"
require_sim
[ -e "$LIB" ] || skip "$LIB is not built"
fixed_card

start_holder pod VRAMCTL_LIMIT=1G VRAMCTL_GROUP=train VRAMCTL_POD_NAMESPACE=ml VRAMCTL_POD_NAME=train-0 \
	VRAMCTL_CONTAINER_NAME=trainer LD_PRELOAD="$LIB" -- 300
start_holder nopod VRAMCTL_LIMIT=2G VRAMCTL_GROUP=solo LD_PRELOAD="$LIB" -- 200

# serve NAME ARGS...: starts `vramctl export ARGS` on a free port; sets port_NAME and pid_NAME.
serve() {
	local name=$1 line fd
	shift
	mkfifo "$TMPDIR/$name.out"
	(
		close_holder_fds
		exec env NODE_NAME=gpu-node-1 "$V" export --listen 127.0.0.1:0 "$@" >"$TMPDIR/$name.out" 2>"$TMPDIR/$name.err"
	) &
	printf -v "pid_$name" '%s' "$!"
	exec {fd}<"$TMPDIR/$name.out"
	read -r -t 20 -u "$fd" line || {
		fail "export $* printed nothing: $(cat "$TMPDIR/$name.err")"
		finish
	}
	exec {fd}<&-
	line=${line##*:}
	printf -v "port_$name" '%s' "${line%%/*}"
}

serve hami --hami
serve plain
scrape "$port_hami" "$TMPDIR/hami"
scrape "$port_plain" "$TMPDIR/plain"

U=GPU-0e0e0e0e-1111-2222-3333-444444444444
L="namespace=\"ml\",pod=\"train-0\",container=\"trainer\",vdevice_index=\"0\",device_uuid=\"$U\",zone=\"vGPU\""
LL="podnamespace=\"ml\",podname=\"train-0\",ctrname=\"trainer\",vdeviceid=\"0\",deviceuuid=\"$U\",zone=\"vGPU\""
for want in "hami_vgpu_memory_limit_bytes{$L} 1073741824" "hami_vgpu_memory_used_bytes{$L} " \
	"hami_container_device_memory_bytes{$L} " "hami_vgpu_memory_buffer_bytes{$L} 314572800" \
	"hami_vgpu_memory_context_bytes{$L} " \
	"vGPU_device_memory_limit_in_bytes{$LL} 1073741824" "vGPU_device_memory_usage_in_bytes{$LL} " \
	"hami_host_gpu_memory_used_bytes{node=\"gpu-node-1\",device_index=\"0\",device_uuid=\"$U\",device_type=\"NVIDIA-" \
	"HostGPUMemoryUsage{nodeid=\"gpu-node-1\",deviceidx=\"0\",deviceuuid=\"$U\"" \
	'vramctl_build_info{version="' \
	"vramctl_process_used_bytes{pid=\"$HPID_pod\",ns_pid=\"$HPID_pod\",gpu=\"0\",uuid=\"$U\",group=\"train\",user=\"$(id -un)\",pod_namespace=\"ml\",pod_name=\"train-0\",container_name=\"trainer\"} "; do
	grep -qF -- "$want" "$TMPDIR/hami" || fail "--hami: /metrics lacks: $want"
done
# The used figure: what the card holds for it (300 MiB and the simulated context).
used=$(sed -n "s/^hami_vgpu_memory_used_bytes{.*} //p" "$TMPDIR/hami")
[ -n "$used" ] && [ "$used" -ge 314572800 ] || fail "--hami: used $used, expected at least 300 MiB"
# One container in HAMi's series: the program without a pod is not there.
[ "$(grep -c '^hami_vgpu_memory_limit_bytes{' "$TMPDIR/hami")" = 1 ] || fail "--hami: not one container: $(grep '^hami_vgpu' "$TMPDIR/hami")"
grep -q 'group="solo"' "$TMPDIR/hami" || fail "--hami: vramctl's own series lack the program without a pod"
# Without --hami: none of HAMi's names.
grep -qE '^(hami_|vGPU_|HostGPU)' "$TMPDIR/plain" && fail "without --hami, HAMi's series are served"
grep -qF 'pod_name="train-0"' "$TMPDIR/plain" || fail "without --hami, vramctl's series lack the pod label"

for n in hami plain; do
	p=pid_$n
	kill -TERM "${!p}"
	wait "${!p}" || fail "export $n exited $? on SIGTERM"
done
stop_holder pod
stop_holder nopod
if [ "$fails" = 0 ] && command -v promtool >/dev/null; then
	# HAMi's legacy names are camelCase, HAMi's choice: that lint only.
	promtool check metrics <"$TMPDIR/hami" >"$TMPDIR/promtool" 2>&1 ||
		! grep -v "should be written in 'snake_case' not 'camelCase'" "$TMPDIR/promtool" | grep -q . ||
		fail "promtool check metrics: $(cat "$TMPDIR/promtool")"
fi
finish
