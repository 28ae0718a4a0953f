# bench: benchmarks (`make bench`), not tests: they print figures and never
# assert on time. Each module adds a phony target that builds and runs its
# benchmarks to BENCH_TARGETS; `make bench` runs them all.
BENCHES :=
BENCH_TARGETS :=

# The injected library: an alloc+free pair, direct vs under vramctl.
$(O)/bench/alloc_bench: bench/alloc_bench.c $(SIM_CUDA) $(HOOK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< -L$(O)/sim -lcuda -ldl $(BASE_LDFLAGS)
BENCHES += $(O)/bench/alloc_bench

# A do-nothing driver, so vramctl's own cost is not lost in the simulator's.
$(O)/bench/nulldriver/libcuda.so.1: bench/alloc_bench_driver.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $< $(BASE_LDFLAGS)

.PHONY: bench-alloc
bench-alloc: $(O)/bench/alloc_bench $(O)/bench/nulldriver/libcuda.so.1
	@echo "== alloc_bench on the simulated driver"
	@VRAMSIM_STATE_DIR=$$(mktemp -d) LD_LIBRARY_PATH=$(O)/sim $(O)/bench/alloc_bench
	@echo "== alloc_bench on a do-nothing driver (vramctl's own cost)"
	@LD_LIBRARY_PATH=$(O)/bench/nulldriver $(O)/bench/alloc_bench
BENCH_TARGETS += bench-alloc

# The same pair with 1, 2 and 4 processes of one group and 2 and 4 threads
# of one process, on the do-nothing driver (the shared books' scaling).
$(O)/bench/alloc_group_bench: bench/alloc_group_bench.c $(SIM_CUDA) $(HOOK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< -L$(O)/sim -lcuda -ldl $(BASE_LDFLAGS)

.PHONY: bench-alloc-group
bench-alloc-group: $(O)/bench/alloc_group_bench $(O)/bench/nulldriver/libcuda.so.1
	@echo "== alloc_group_bench on a do-nothing driver"
	@LD_LIBRARY_PATH=$(O)/bench/nulldriver $(O)/bench/alloc_group_bench
BENCH_TARGETS += bench-alloc-group
bench: bench-alloc-group

.PHONY: bench
bench: $(BENCH_TARGETS)

# The cap on the card where it asks NVML (#37): a refused request retried,
# a new context, and the memory NVML adds to a capped process.
$(O)/bench/card_bench: bench/card_bench.c $(SIM_CUDA) $(HOOK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< -L$(O)/sim -lcuda $(BASE_LDFLAGS)
BENCHES += $(O)/bench/card_bench

.PHONY: bench-card
bench-card: $(O)/bench/card_bench
	@echo "== card_bench on the simulated driver"
	@bench/card_bench.sh $(O)
BENCH_TARGETS += bench-card
bench: bench-card

# The monitor: `vramctl status --json` with 1,000 process records, and the
# CPU `vramctl top` uses at one refresh a second, in tmux.
$(O)/bench/status_bench: $(O)/bench/status_bench.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^

.PHONY: bench-monitor
bench-monitor: $(O)/bench/status_bench $(VRAMCTL)
	@echo "== status_bench: vramctl status --json with 1,000 process records"
	@VRAMSIM_STATE_DIR=$$(mktemp -d) LD_LIBRARY_PATH=$(O)/sim $(O)/bench/status_bench $(VRAMCTL)
	@echo "== top_bench: vramctl top's CPU at one refresh a second"
	@VR_BUILD=$(O) VRAMSIM_STATE_DIR=$$(mktemp -d) LD_LIBRARY_PATH=$(abspath $(O))/sim bench/top_bench.sh 10 200
BENCH_TARGETS += bench-monitor
bench: bench-monitor

# The shared registry: reserve+release pairs (1 process; 4 processes x 2
# threads), attach time (1 and 256 at once), a snapshot of 1,000 members.
$(O)/bench/registry_bench: $(O)/bench/registry_bench.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^

.PHONY: bench-registry
bench-registry: $(O)/bench/registry_bench
	@echo "== registry_bench: the shared books' own costs"
	@$(O)/bench/registry_bench
BENCH_TARGETS += bench-registry
bench: bench-registry

# `vramctl run`'s start: one command, and a job of 256 CUDA processes
# joining one group at once, beside the same started directly.
$(O)/bench/start_bench: $(O)/bench/start_bench.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^

$(O)/bench/start_child: bench/start_child.c $(SIM_CUDA)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< -L$(O)/sim -lcuda $(BASE_LDFLAGS)

# The floor under the 256-process figure: a preloaded library that joins a
# shared group with nothing else (start_bench preloads it beside vramctl's).
$(O)/bench/libfloor_member.so: bench/floor_member.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS)

.PHONY: bench-start
bench-start: $(O)/bench/start_bench $(O)/bench/start_child $(O)/bench/libfloor_member.so $(O)/bench/nulldriver/libcuda.so.1 $(VRAMCTL) $(HOOK_LIB)
	@echo "== start_bench: what vramctl run adds to starting commands"
	@LD_LIBRARY_PATH=$(abspath $(O))/bench/nulldriver $(O)/bench/start_bench $(abspath $(VRAMCTL)) $(abspath $(O))/bench/start_child
BENCH_TARGETS += bench-start
bench: bench-start
# Built with everything, so that both compilers' warnings see them.
ALL_TARGETS += $(O)/bench/start_bench $(O)/bench/start_child $(O)/bench/libfloor_member.so

# The driver's facts the simulator has to choose (bench/gpu/driver_facts.c):
# run on a machine with a GPU, e.g. by bench/gpu/device.sh.
$(O)/bench/driver_facts: bench/gpu/driver_facts.c $(SIM_CUDA) $(SIM_NVML)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< -L$(O)/sim -lcuda -lnvidia-ml $(BASE_LDFLAGS)
ALL_TARGETS += $(O)/bench/driver_facts

# The machine's preload (`vramctl preload`): the start of a program that
# never calls the driver, directly, under an empty preloaded library and
# under vramctl's, through LD_PRELOAD and (root) /etc/ld.so.preload.
$(O)/bench/preload_bench: bench/preload_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -o $@ $< $(BASE_LDFLAGS)
$(O)/bench/empty_preload.so: bench/empty_preload.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS)
BENCHES += $(O)/bench/preload_bench $(O)/bench/empty_preload.so

.PHONY: bench-preload
bench-preload: $(O)/bench/preload_bench $(O)/bench/empty_preload.so $(HOOK_LIB)
	@echo "== preload_bench: a program that never calls the driver, under the machine's preload"
	@bench/preload_bench.sh $(O)
BENCH_TARGETS += bench-preload
bench: bench-preload

# The device book (#38): join, borrow and release beside 1, 100 and 1,000
# other processes on the GPU (as root: it writes a book).
$(O)/bench/devbook_bench: $(O)/bench/devbook_bench.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^

.PHONY: bench-devbook
bench-devbook: $(O)/bench/devbook_bench $(O)/bench/start_bench $(O)/bench/start_child \
		$(HOOK_LIB) $(VRAMCTL)
	@echo "== devbook_bench: the device book beside 1, 100 and 1,000 processes"
	@$(O)/bench/devbook_bench
	@echo "== guarantee_storm.sh: 1,000 capped processes started at once, a guarantee held"
	@VR_BUILD=$(O) bench/guarantee_storm.sh 1000
BENCH_TARGETS += bench-devbook
bench: bench-devbook
