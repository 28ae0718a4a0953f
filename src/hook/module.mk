# src/hook: the injected library, libvramctl.so. Depends on libc alone; the
# driver and NVML are dlopen'ed at run time. The export list is generated
# from hooks.def (exports.lds.in), and tests/hook/exports.sh checks the
# result: NEEDED and the exported symbols, in every build type.
HOOK_SRCS := $(wildcard src/hook/*.c)
HOOK_OBJS := $(HOOK_SRCS:%.c=$(O)/%.o)
HOOK_LDS := $(O)/src/hook/exports.lds

# clang links no sanitizer runtime into shared libraries (the program
# brings it), so -z defs only holds for gcc and for clang's release builds.
ifeq ($(findstring clang,$(CCNAME))$(SANITIZE),clang)
  HOOK_ZDEFS := -Wl,-z,defs
else ifeq ($(findstring clang,$(CCNAME)),)
  HOOK_ZDEFS := -Wl,-z,defs
else
  HOOK_ZDEFS :=
endif

$(HOOK_LDS): src/hook/exports.lds.in src/hook/hooks.def
	@mkdir -p $(dir $@)
	$(CC) -E -P -x c -Isrc $< -o $@

$(HOOK_LIB): $(HOOK_OBJS) $(REGISTRY_LIB) $(COMMON_LIB) $(HOOK_LDS)
	@mkdir -p $(dir $@)
	$(CC) -shared $(BASE_LDFLAGS) -Wl,--version-script=$(HOOK_LDS) $(HOOK_ZDEFS) \
		-Wl,-z,nodelete -Wl,-Bsymbolic-functions -Wl,-soname,libvramctl.so -o $@ \
		$(HOOK_OBJS) $(REGISTRY_LIB) $(COMMON_LIB)
ALL_TARGETS += $(HOOK_LIB)


# Tests: each tests/hook/test_*.c is one program linked against the driver
# as a CUDA program links (-lcuda, here the simulator's libcuda.so.1, found at
# run time through LD_LIBRARY_PATH like the real one). They load the library
# themselves (LD_PRELOAD in a re-exec), so they depend on it.
HOOK_TEST_SRCS := $(sort $(wildcard tests/hook/test_*.c))
HOOK_TESTS := $(HOOK_TEST_SRCS:tests/hook/%.c=$(O)/tests/hook/%)
HOOK_TEST_LIBS := $(O)/tests/hook/libinterposer.so $(O)/tests/hook/libnullinfo.so

$(O)/tests/hook/%: tests/hook/%.c tests/hook/hooktest.h $(SIM_CUDA) $(SIM_NVML) $(HOOK_LIB) \
		$(HOOK_TEST_LIBS) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -Itests -o $@ $< $(COMMON_LIB) -L$(O)/sim -lcuda -lnvidia-ml -ldl $(BASE_LDFLAGS)

# Another LD_PRELOAD interposer, built at -O0 on purpose: its
# dlsym(RTLD_NEXT, ...) must keep its meaning behind vramctl's dlsym.
$(O)/tests/hook/libinterposer.so: tests/hook/interposer.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O0 -shared -o $@ $< $(BASE_LDFLAGS)

# A driver whose cuMemGetInfo accepts a NULL pointer, over the simulator's
# (test_null_info).
$(O)/tests/hook/libnullinfo.so: tests/hook/nullinfo.c $(SIM_CUDA)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $< -L$(O)/sim -Wl,--no-as-needed -lcuda $(BASE_LDFLAGS)

TESTS += $(HOOK_TESTS)
TEST_SCRIPTS += tests/hook/exports.sh tests/hook/card.sh tests/hook/limit.sh tests/hook/guarantee.sh \
	tests/hook/guarantee_attacks.sh tests/hook/guarantee_truth.sh tests/hook/limit_guarantee.sh tests/hook/hints.sh tests/hook/limit_devices.sh \
	tests/hook/wait.sh tests/hook/park.sh

# A GPU program driven line by line on stdin (allocate, free, ask), for the
# tests of caps that change while it runs (limit.sh) and of guarantees.
$(O)/tests/hook/memctl: $(O)/tests/hook/memctl.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
ALL_TARGETS += $(O)/tests/hook/memctl

# The one-line /etc/ld.so.preload that `vramctl cdi` mounts into containers,
# beside the library (cdi.c checks its content).
HOOK_PRELOAD := $(O)/ld.so.preload
$(HOOK_PRELOAD): src/hook/module.mk
	@mkdir -p $(dir $@)
	printf '%s\n' /usr/lib/vramctl/libvramctl.so > $@
ALL_TARGETS += $(HOOK_PRELOAD)
