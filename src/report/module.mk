# src/report: `vramctl run --report/--trace` (the CLI's half: reading the
# members' record files, the report, the Chrome trace, symbols with libdw)
# and `vramctl plot` (json-c, cairo). Linked into the CLI only: the
# injected library writes its record with libc alone (src/hook/record.c).
REPORT_SRCS := $(wildcard src/report/*.c)
REPORT_LIB := $(O)/libvr_report.a
$(REPORT_LIB): $(REPORT_SRCS:%.c=$(O)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(O)/src/report/%.o $(O)/src/cli/plot.o: BASE_CFLAGS += $(shell pkg-config --cflags cairo json-c 2>/dev/null)
# Only in the programs that need it (src/cli/module.mk): libexec/vramctl-run
# (run --report/--trace) and libexec/vramctl-plot.
$(O)/libexec/vramctl-run $(O)/libexec/vramctl-plot: $(REPORT_LIB)
ALL_TARGETS += $(REPORT_LIB)

# Tests: memprog (a GPU program whose leaks and call sites are known), the
# report/trace/plot scripts, and pngcheck (looks at a rendered picture).
REPORT_TEST_PROGS := $(O)/tests/report/memprog $(O)/tests/report/pngcheck \
	$(O)/tests/report/fake/libc10_cuda.so
$(O)/tests/report/memprog: tests/report/memprog.c $(SIM_CUDA) $(HOOK_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -O1 -o $@ $< -L$(O)/sim -lcuda -ldl $(BASE_LDFLAGS)
# A library named as PyTorch's CUDA allocator's: the report calls what a
# process holds at exit a cache when one is loaded.
$(O)/tests/report/fake/libc10_cuda.so: tests/report/fake_framework.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS)
$(O)/tests/report/pngcheck: tests/report/pngcheck.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(shell pkg-config --cflags cairo) -o $@ $< $(BASE_LDFLAGS) -lcairo
ALL_TARGETS += $(REPORT_TEST_PROGS)
TEST_SCRIPTS += $(sort $(wildcard tests/report/*.sh))
