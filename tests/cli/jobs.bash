# tests/cli/jobs.bash - sourced by the tests of job-bound caps (job_*.sh;
# not a test itself): the simulator's 16 GiB card, the holder program, the
# variables a cleared environment keeps, and the test in a private mount
# namespace of its own (tests/machine_ns.bash). Skips where the real
# library cannot be preloaded or the sizes are not the simulator's.
. "$VR_SRC/tests/cli/common.bash"
sim_only || skip "needs the simulator's sizes"
has_cap || skip "the real library cannot be preloaded into every program in this build"
. "$VR_SRC/tests/machine_ns.bash"
export VRAMSIM_DEVICES=16G
HOLDER=$VR_BUILD/tests/monitor/holder
mapfile -t KEEP < <(keep_env)
