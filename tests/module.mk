# tests: unit tests of the pure helpers in src/common. Each module keeps the
# tests of its own code beside its module.mk's rules (tests/<module>/).
UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*.c))
$(O)/tests/unit/%: $(O)/tests/unit/%.o $(COMMON_LIB)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(UNIT_TESTS)
