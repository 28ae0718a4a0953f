#!/usr/bin/env bash
# bench/gpu/jobs.sh - the cap follows the job (#34) on a real GPU: inside a
# `vramctl run --limit 4G` job, a PyTorch child started with `env -u
# LD_PRELOAD` takes 3 GiB, then a member of the job (its environment kept)
# asks 2 GiB. Without the machine's preload the child runs outside the cap:
# the run's watcher charges it to the job and the member is refused. With
# it (root: /etc/ld.so.preload in a private mount namespace, the machine's
# file untouched) the child is held by the job's cap. Prints, each way,
# what nvidia-smi says the card holds for the child and for the whole job,
# and the run's lines.
#
#   bench/gpu/jobs.sh [BUILD_DIR]     (default: build/gcc-release)
#
# Exit status: 0 when both ways held (the job's total on the card within
# its cap, a 2 MiB page a process aside, once the watcher has charged).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build/gcc-release}" && pwd)
py=${PYTHON:-python3}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no NVIDIA GPU here: nothing to run"
	exit 0
fi
"$py" -c "import torch" >/dev/null 2>&1 || { echo "torch not installed: skipped"; exit 0; }
cap_mib=4096

# One way: the job and its two processes; prints the figures.
one_way() { # LABEL
	local label=$1 t
	t=$(mktemp -d)
	mkfifo "$t/hold"
	"$build/vramctl" run --limit "${cap_mib}M" --group "jobs-$$-$label" -- bash -c "
		exec 3<>'$t/hold'
		env -u LD_PRELOAD '$py' '$here/jobs_case.py' 3072 <'$t/hold' 3>&- >'$t/child.out' 2>'$t/child.err' &
		echo \$! >'$t/child.pid'
		for i in \$(seq 600); do grep -q ready '$t/child.out' 2>/dev/null && break; sleep 0.1; done
		sleep 2 # the watcher looks every half second
		'$py' '$here/jobs_case.py' 2048 <'$t/hold' 3>&- >'$t/member.out' 2>'$t/member.err' &
		echo \$! >'$t/member.pid'
		for i in \$(seq 600); do grep -q ready '$t/member.out' 2>/dev/null && break; sleep 0.1; done
		nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >'$t/smi'
		exec 3>&-; wait" 2>"$t/run.err"
	local child member c_mib m_mib
	child=$(cat "$t/child.pid") member=$(cat "$t/member.pid")
	c_mib=$(awk -F', *' -v p="$child" '$1 == p { print $2 }' "$t/smi")
	m_mib=$(awk -F', *' -v p="$member" '$1 == p { print $2 }' "$t/smi")
	printf '%-10s child (env -u LD_PRELOAD): %s, %s MiB on the card; member: %s, %s MiB; job %s MiB (cap %s)\n' \
		"$label" "$(cat "$t/child.out")" "${c_mib:-0}" "$(cat "$t/member.out")" "${m_mib:-0}" \
		"$((${c_mib:-0} + ${m_mib:-0}))" "$cap_mib"
	sed 's/^/    /' "$t/run.err"
	local total=$((${c_mib:-0} + ${m_mib:-0}))
	rm -rf "$t"
	[ "$total" -le $((cap_mib + 4)) ]
}

ok=0
one_way no-preload || ok=1
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	unshare -m --propagation private bash -c '
		etc=$(mktemp -d); cp -a /etc/. "$etc/"; mount --bind "$etc" /etc
		"$1/vramctl" preload enable --library "$1/libvramctl.so" >/dev/null || exit 1
		'"$(declare -f one_way)"'
		build=$1 here=$2 py=$3 cap_mib=$4
		one_way preload' bash "$build" "$here" "$py" "$cap_mib" || ok=1
else
	echo "preload    not root: not measured"
fi
exit $ok
