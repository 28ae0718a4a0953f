# src/launch: what every launcher uses to turn a request into the
# environment contract and to join a group (launch.h). libc and the registry
# only: linked into the vramctl CLI and the Slurm plugin.
LAUNCH_SRCS := $(wildcard src/launch/*.c)
$(LAUNCH_LIB): $(LAUNCH_SRCS:%.c=$(O)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
ALL_TARGETS += $(LAUNCH_LIB)
$(CLI_PROGRAMS): $(LAUNCH_LIB)

# Unit tests of the contract's pure parts and of joining.
$(O)/tests/launch/test_launch: $(O)/tests/launch/test_launch.o $(LAUNCH_LIB) $(REGISTRY_LIB) \
		$(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(O)/tests/launch/test_launch
