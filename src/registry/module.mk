# src/registry: the shared per-group books (doors and segments, robust lock,
# liveness) and the read-only snapshot API for monitors. libc only; linked
# into both the injected library and the vramctl CLI.
REGISTRY_SRCS := $(wildcard src/registry/*.c)
$(REGISTRY_LIB): $(REGISTRY_SRCS:%.c=$(O)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
ALL_TARGETS += $(REGISTRY_LIB)

# Tests: one program per file in tests/registry/, each linked with the
# registry (and the common helpers it uses).
REGISTRY_TEST_SRCS := $(wildcard tests/registry/*.c)
REGISTRY_TESTS := $(REGISTRY_TEST_SRCS:%.c=$(O)/%)
$(REGISTRY_TESTS): $(O)/tests/registry/%: $(O)/tests/registry/%.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(REGISTRY_TESTS)

.PHONY: registry
registry: $(REGISTRY_LIB) $(REGISTRY_TESTS)
