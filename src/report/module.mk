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
	$(O)/tests/report/fake/libc10_cuda.so $(O)/tests/report/fuzz_plot
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
# The plot's fuzz target as a plain program (tests/report/fuzz_plot.sh).
PLOT_LIBS := -ljson-c -lcairo -lfontconfig -lm
$(O)/tests/report/fuzz_plot: $(O)/tests/report/fuzz_plot.o $(REPORT_LIB) $(COMMON_LIB)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ $(PLOT_LIBS)
$(O)/tests/report/fuzz_plot.o: BASE_CFLAGS += $(shell pkg-config --cflags cairo json-c 2>/dev/null)
ALL_TARGETS += $(REPORT_TEST_PROGS)

# The same target under libFuzzer (clang), for longer runs than the suite's:
#   make fuzz-plot [FUZZ_SECONDS=60]
# (leaks are not looked for there: fontconfig keeps caches across inputs;
# the suite's ASan run of fuzz_plot looks for ours.)
FUZZ_SECONDS ?= 60
.PHONY: fuzz-plot
fuzz-plot:
	@mkdir -p $(BUILD)/fuzz
	clang -std=c11 -D_GNU_SOURCE -DVR_LIBFUZZER -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined \
		-I. -Isrc -Iinclude $(shell pkg-config --cflags cairo json-c) \
		tests/report/fuzz_plot.c src/report/plot_read.c src/report/plot_draw.c \
		src/common/text.c src/common/size.c -o $(BUILD)/fuzz/fuzz_plot $(PLOT_LIBS)
	mkdir -p $(BUILD)/fuzz/corpus && cp tests/report/fuzz/*.json tests/report/known_trace.json \
		$(BUILD)/fuzz/corpus/
	ASAN_OPTIONS=detect_leaks=0 $(BUILD)/fuzz/fuzz_plot -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=1024 \
		$(BUILD)/fuzz/corpus
TEST_SCRIPTS += $(sort $(wildcard tests/report/*.sh))

# The overhead and the peak on the card from the library's record to
# the report, without a driver: record.c linked in with stubs.
$(O)/tests/report/test_record: $(O)/tests/report/test_record.o $(O)/src/hook/record.o \
		$(REPORT_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldw -ljson-c -lm -ldl
$(O)/tests/report/test_record.o: BASE_CFLAGS += $(shell pkg-config --cflags json-c 2>/dev/null)
TESTS += $(O)/tests/report/test_record

# The report's view of caps changed while the run ran, on fixed inputs.
$(O)/tests/report/test_report_changes: $(O)/tests/report/test_report_changes.o $(REPORT_LIB) \
		$(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldw -ljson-c -lm -ldl
$(O)/tests/report/test_report_changes.o: BASE_CFLAGS += $(shell pkg-config --cflags json-c 2>/dev/null)
TESTS += $(O)/tests/report/test_report_changes
