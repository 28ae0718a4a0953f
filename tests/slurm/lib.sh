# tests/slurm/lib.sh - a private one-node Slurm for tests, sourced by
# tests/slurm/cluster.sh and driver.sh: munged, slurmctld and slurmd from Debian's packages,
# started in the background with their own config, state, spool, sockets and
# ports under $VS (a fresh directory), and stopped by PID.
#
#   vs_reconfigure ARGS       write plugstack.conf with the plugin and ARGS
#                             (Slurm re-reads it at every job launch)
#   vs_start                  start everything; returns 0 when sinfo shows the
#                             node idle (bounded polling), 2 when slurmd
#                             cannot run on this machine (its cgroup setup),
#                             1 on any other failure
#   vs_stop                   stop what vs_start started (safe to call twice)
#   skip REASON, fail WHAT    the tests' verdicts (exit 77, exit 1)
#
# Needs: VS (directory, 0755), VS_PLUGIN (the plugin .so). Sets SLURM_CONF.

vs_log() { printf '%s\n' "$*" >&2; }

# The tests' verdicts: skip (77) with the reason; fail at once, with the end
# of slurmd's log.
skip() {
	echo "$*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	[ -n "${VS:-}" ] && [ -d "$VS/log" ] && tail -n 15 "$VS"/log/slurmd.log 2>/dev/null
	exit 1
}

# A free TCP port on loopback, starting the search at $1.
vs_free_port() {
	local p=$1
	while ss -Htln "sport = :$p" 2>/dev/null | grep -q . ||
		ss -Htln "sport = :$((p + 1))" 2>/dev/null | grep -q .; do
		p=$((p + 7))
	done
	echo "$p"
}

vs_reconfigure() {
	mkdir -p "$VS/etc"
	printf 'required %s %s\n' "$VS_PLUGIN" "$*" >"$VS/etc/plugstack.conf"
	chmod 0644 "$VS/etc/plugstack.conf"
}

vs_start() {
	local node cpus base ctld_port slurmd_port i
	node=$(hostname -s)
	cpus=$(nproc)
	mkdir -p "$VS/etc" "$VS/state" "$VS/spool" "$VS/log" "$VS/run" "$VS/munge" "$VS/dev"
	chmod 0700 "$VS/munge" "$VS/state" "$VS/spool"
	chmod 0755 "$VS/etc" "$VS/run"
	# munge's socket must be reachable by every user who submits.
	chmod 0711 "$VS/munge"

	# munge: a private key and socket; --force because we are root and the
	# directories are not the packaged ones.
	dd if=/dev/urandom of="$VS/munge/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$VS/munge/munge.key"
	munged -F --force --socket="$VS/munge/munge.sock" --key-file="$VS/munge/munge.key" \
		--pid-file="$VS/munge/munged.pid" --log-file="$VS/log/munged.log" \
		--seed-file="$VS/munge/munged.seed" >"$VS/log/munged.out" 2>&1 &
	VS_PIDS="$!"
	for i in $(seq 100); do
		[ -S "$VS/munge/munge.sock" ] && break
		sleep 0.05
	done
	[ -S "$VS/munge/munge.sock" ] || { vs_log "munged did not start"; cat "$VS/log/munged.log" >&2; return 1; }

	# A port base that differs between runs and machines, then the first free.
	base=$((20000 + ($$ % 2000) * 10))
	ctld_port=$(vs_free_port "$base")
	slurmd_port=$(vs_free_port $((ctld_port + 3)))

	# One fake GPU device file: gres/gpu needs a File=, and shards need a gpu.
	: >"$VS/dev/nvidia0"
	cat >"$VS/etc/slurm.conf" <<EOF
ClusterName=vrtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$VS/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$VS/state
SlurmdSpoolDir=$VS/spool
SlurmctldPidFile=$VS/run/slurmctld.pid
SlurmdPidFile=$VS/run/slurmd.pid
SlurmctldLogFile=$VS/log/slurmctld.log
SlurmdLogFile=$VS/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=debug
PlugStackConfig=$VS/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
GresTypes=gpu,shard
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 Gres=gpu:1,shard:4 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	cat >"$VS/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=$node Name=gpu File=$VS/dev/nvidia0
NodeName=$node Name=shard Count=4
EOF
	chmod 0644 "$VS"/etc/*
	export SLURM_CONF=$VS/etc/slurm.conf

	slurmctld -D -c -i -f "$SLURM_CONF" >"$VS/log/slurmctld.out" 2>&1 &
	VS_PIDS="$VS_PIDS $!"
	slurmd -D -f "$SLURM_CONF" -N "$node" >"$VS/log/slurmd.out" 2>&1 &
	VS_PIDS="$VS_PIDS $!"

	# Bounded wait (30 s) until the node is idle.
	for i in $(seq 300); do
		if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then
			return 0
		fi
		sleep 0.1
	done
	if grep -q "Unable to initialize cgroup plugin" "$VS/log/slurmd.log" 2>/dev/null; then
		vs_log "slurmd cannot initialise cgroups on this machine:"
		grep -i cgroup "$VS/log/slurmd.log" | tail -n 3 >&2
		return 2
	fi
	vs_log "Slurm did not come up; logs:"
	tail -n 20 "$VS"/log/slurmctld.log "$VS"/log/slurmd.log "$VS"/log/*.out >&2 2>/dev/null
	return 1
}

vs_stop() {
	local p i alive jobs
	[ -n "${VS_PIDS:-}" ] || return 0
	# Jobs a failed check left running go first, so no step outlives slurmd.
	jobs=$(timeout 5 squeue -h -o %i 2>/dev/null)
	[ -n "$jobs" ] && timeout 5 scancel --signal=KILL $jobs 2>/dev/null
	# slurmd first (it kills its steps), then slurmctld, then munged.
	for p in $(echo "$VS_PIDS" | tr ' ' '\n' | tac); do
		kill -TERM "$p" 2>/dev/null
	done
	for i in $(seq 100); do
		alive=
		for p in $VS_PIDS; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for p in $VS_PIDS; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	VS_PIDS=
}
