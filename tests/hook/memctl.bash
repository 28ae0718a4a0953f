# tests/hook/memctl.bash - the setup of the tests that drive memctl
# processes from Python (tests/hook/memctl.py): the simulated driver, the
# real library, a card (VRAMSIM_DEVICES, 16G unless the test set it) whose
# contexts take nothing, so every figure is exact (sourced, not a test).
. "$VR_SRC/tests/cli/common.bash"
sim_only || { echo "skip: needs the simulated driver (the card's figures exact)"; exit 77; }
has_cap || { echo "skip: the library is a stand-in here"; exit 77; }
export VRAMSIM_DEVICES=${VRAMSIM_DEVICES:-16G} VRAMSIM_CONTEXT_BYTES=0
export MEMCTL=$VR_BUILD/tests/hook/memctl V LIB
[ -x "$MEMCTL" ] || { echo "skip: $MEMCTL is not built"; exit 77; }
