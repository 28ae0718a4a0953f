# sim: the simulated GPU used by every test - libcuda.so.1 (the driver API)
# and libnvidia-ml.so.1 (NVML). Both read the same per-card state files.
# See docs/architecture.md, "The driver, and the simulated GPU".

# clang links no sanitizer runtime into shared libraries (the program brings
# it), so undefined symbols are checked everywhere except clang sanitizer builds.
ifeq ($(findstring clang,$(CCNAME)),clang)
  SIM_ZDEFS := $(if $(SANITIZE),,-Wl,--no-undefined)
else
  SIM_ZDEFS := -Wl,--no-undefined
endif

SIM_COMMON_OBJS := $(O)/sim/config.o $(O)/sim/card.o $(O)/sim/memlimit.o $(O)/sim/rules.o
# libcuda: one object per job (sim.h lists them, sim/LAYERS orders them).
SIM_CUDA_SRCS := exports init device errors procaddr checkpoint context sync ipc query copy \
	free linear pool hostmem vmm array small graph_exec capture graph stream current alloc \
	module account driver
SIM_CUDA_OBJS := $(SIM_CUDA_SRCS:%=$(O)/sim/%.o) $(SIM_COMMON_OBJS)
SIM_NVML_OBJS := $(O)/sim/nvml.o $(SIM_COMMON_OBJS)
SIM_NVML_NOV3 := $(O)/sim/nvml-no-v3/libnvidia-ml.so.1

# The version scripts come from the X-macro lists, so exports cannot drift:
# the preprocessor expands each list, sed keeps the names. The anonymous
# version node leaves the symbols unversioned, as NVIDIA's libraries are.
$(O)/sim/libcuda.map: sim/cuda_syms.c src/common/cuda_api.h sim/cuda_extra.h
	@mkdir -p $(dir $@)
	{ echo '{ global:'; \
	  $(CC) -E -P -I. -Isrc $< | sed -n '/VRAMSIM_SYMBOLS_BEGIN/,$$p' | tr ' ' '\n' | \
	    sed -n '/^VRAMSIM_SYM$$/{n;s/^\(.*\)$$/  \1;/p}'; \
	  echo '  vramsim_take;'; echo 'local: *; };'; } > $@.tmp && mv $@.tmp $@

$(O)/sim/libnvidia-ml.map: sim/nvml_syms.c src/common/nvml_api.h
	@mkdir -p $(dir $@)
	{ echo '{ global:'; \
	  $(CC) -E -P -Isrc $< | sed -n '/VRAMSIM_SYMBOLS_BEGIN/,$$p' | tr ' ' '\n' | \
	    sed -n '/^VRAMSIM_SYM$$/{n;s/^\(.*\)$$/  \1;/p}'; \
	  echo '  nvmlErrorString;'; echo 'local: *; };'; } > $@.tmp && mv $@.tmp $@

$(O)/sim/libnvidia-ml-no-v3.map: $(O)/sim/libnvidia-ml.map
	grep -v 'nvmlDeviceGetComputeRunningProcesses_v3;' $< > $@

$(SIM_CUDA): $(SIM_CUDA_OBJS) $(COMMON_LIB) $(O)/sim/libcuda.map
	$(CC) -shared -o $@ $(SIM_CUDA_OBJS) $(COMMON_LIB) -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic-functions \
		-Wl,--version-script=$(O)/sim/libcuda.map $(SIM_ZDEFS) $(BASE_LDFLAGS)
	ln -sf libcuda.so.1 $(O)/sim/libcuda.so

$(SIM_NVML): $(SIM_NVML_OBJS) $(COMMON_LIB) $(O)/sim/libnvidia-ml.map
	$(CC) -shared -o $@ $(SIM_NVML_OBJS) $(COMMON_LIB) -Wl,-soname,libnvidia-ml.so.1 -Wl,-Bsymbolic-functions \
		-Wl,--version-script=$(O)/sim/libnvidia-ml.map $(SIM_ZDEFS) $(BASE_LDFLAGS)
	ln -sf libnvidia-ml.so.1 $(O)/sim/libnvidia-ml.so

# The same NVML without nvmlDeviceGetComputeRunningProcesses_v3, as older
# drivers ship it: same objects, a version script without that name.
$(SIM_NVML_NOV3): $(SIM_NVML_OBJS) $(COMMON_LIB) $(O)/sim/libnvidia-ml-no-v3.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_NVML_OBJS) $(COMMON_LIB) -Wl,-soname,libnvidia-ml.so.1 -Wl,-Bsymbolic-functions \
		-Wl,--version-script=$(O)/sim/libnvidia-ml-no-v3.map $(SIM_ZDEFS) $(BASE_LDFLAGS)

# The same driver as one before CUDA 11.6 ships it: without
# cu[Mipmapped]ArrayGetMemoryRequirements, nor the checkpoint API (CUDA
# 12.8) (run it with VRAMSIM_DRIVER_VERSION=11050 so cuGetProcAddress
# agrees).
SIM_CUDA_OLD := $(O)/sim/cuda-11.5/libcuda.so.1
$(O)/sim/libcuda-11.5.map: $(O)/sim/libcuda.map sim/module.mk
	grep -v -e 'ArrayGetMemoryRequirements;' -e 'cuCheckpointProcess' $< > $@

$(SIM_CUDA_OLD): $(SIM_CUDA_OBJS) $(COMMON_LIB) $(O)/sim/libcuda-11.5.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_CUDA_OBJS) $(COMMON_LIB) -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic-functions \
		-Wl,--version-script=$(O)/sim/libcuda-11.5.map $(SIM_ZDEFS) $(BASE_LDFLAGS)

ALL_TARGETS += $(SIM_CUDA) $(SIM_NVML) $(SIM_NVML_NOV3) $(SIM_CUDA_OLD)

# Tests of the simulator itself: each tests/sim/*.c is one program, linked
# against the simulated libraries as a CUDA program links against the driver.
SIM_TEST_SRCS := $(sort $(wildcard tests/sim/*.c))
SIM_TEST_HELPERS := tests/sim/simtest.h
SIM_TESTS := $(SIM_TEST_SRCS:tests/sim/%.c=$(O)/tests/sim/%)

$(O)/tests/sim/%: tests/sim/%.c $(SIM_TEST_HELPERS) $(SIM_CUDA) $(SIM_NVML) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -Itests -o $@ $< $(COMMON_LIB) -L$(O)/sim -lcuda -lnvidia-ml -ldl $(BASE_LDFLAGS) \
		$(SIM_TEST_LDFLAGS)

# test_symbolic exports its own cuMemAlloc_v2, as a preloaded interposer would.
$(O)/tests/sim/test_symbolic: SIM_TEST_LDFLAGS := -rdynamic

# Absolute paths: tests/run runs each test from its own directory.
TESTS += $(abspath $(SIM_TESTS))
# The tests need both libraries, and test_nvml the no-v3 NVML too.
$(SIM_TESTS) $(abspath $(SIM_TESTS)): $(SIM_CUDA) $(SIM_NVML) $(SIM_NVML_NOV3)
$(abspath $(SIM_TESTS)): $(abspath $(O))/tests/sim/%: $(O)/tests/sim/%
