# tests: unit tests of the pure helpers in src/common, and the Debian
# packages (tests/pkg: `make deb`, lintian, dpkg -i into a fresh root). Each
# module keeps the tests of its own code beside its module.mk's rules
# (tests/<module>/).
UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*.c))
$(O)/tests/unit/%: $(O)/tests/unit/%.o $(COMMON_LIB)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(UNIT_TESTS)

# A helper of the shell tests (not a test): writes into a live group's books.
$(O)/tests/cli/regpoke: $(O)/tests/cli/regpoke.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
ALL_TARGETS += $(O)/tests/cli/regpoke
# Sets and reads the simulated driver's per-cgroup limits (NVML), as root.
$(O)/tests/cli/nvmllimit: $(O)/tests/cli/nvmllimit.o
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
ALL_TARGETS += $(O)/tests/cli/nvmllimit

# tests/cdi: `vramctl cdi` specs against the vendored CDI schema, and the
# container test in a real runtime (podman + runc).
TEST_SCRIPTS += $(sort $(wildcard tests/cdi/*.sh))
TEST_SCRIPTS += tests/pkg/deb.sh

# tests/docs: the documentation against the tree (`make test T=docs`).
TEST_SCRIPTS += $(sort $(wildcard tests/docs/*.sh))
