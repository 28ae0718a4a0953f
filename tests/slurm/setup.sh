#!/bin/sh
# tests/slurm/setup.sh - what tests/slurm/cluster.sh needs on a Debian 12 CI
# machine (run as root by .ci/run, before `make`): Slurm's daemons, client and
# plugin header from Debian's packages, and an unprivileged user the test
# submits jobs as. Starts nothing: the test runs its own private daemons.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends munge slurmctld slurmd slurm-client libslurm-dev \
	iproute2 util-linux
# The packages' own services are not used (the test starts private ones).
id -u vrslurm >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh vrslurm
