# src/cli: the vramctl command. One file per subcommand; pure formatting
# code lives apart from terminal and network code so it can be tested.
#
# Heavy commands: a command that needs a library the others do not (a
# terminal UI, an HTTP server, plotting, JSON...) is its own program,
# $(O)/libexec/vramctl-NAME, built from CLI_SRCS_NAME (the files that use
# the library; one defines cmd_NAME) and src/cli/helper/helper_main.c, and
# linked with CLI_LIBS_NAME; main.c lists it with no function and execs it.
# So `vramctl run` and `status`, which every job starts with, load only
# libc. To split another command: add it to CLI_HELPERS, set CLI_SRCS_NAME
# and CLI_LIBS_NAME, and set its function to NULL in main.c
# (docs/architecture.md, "Heavy commands in libexec").
CLI_HELPERS := top export plot run
CLI_SRCS_top := src/cli/top.c src/cli/top_draw.c
CLI_LIBS_top := -lncursesw
CLI_SRCS_export := src/cli/export.c src/cli/export_priv.c
CLI_LIBS_export := -lmicrohttpd
CLI_SRCS_plot := src/cli/plot.c
CLI_LIBS_plot := -ljson-c -lcairo -lfontconfig -lm
# `vramctl run --report/--trace` (run.c execs it; src/report links into it).
CLI_SRCS_run := src/cli/run_report.c
CLI_LIBS_run := -ldw -ljson-c -lm
CLI_HELPER_BINS := $(CLI_HELPERS:%=$(O)/libexec/vramctl-%)

CLI_SRCS := $(wildcard src/cli/*.c)
CLI_MAIN_SRCS := $(filter-out $(foreach h,$(CLI_HELPERS),$(CLI_SRCS_$(h))),$(CLI_SRCS))
# The mark the injected library reads (self.c).
CLI_LDLIBS := -ldl -Wl,--export-dynamic-symbol=vramctl_cli_v1
# Libraries other modules add as prerequisites ($(CLI_PROGRAMS): $(MONITOR_LIB))
# are linked as one group, so their order does not matter.
CLI_PROGRAMS := $(VRAMCTL) $(CLI_HELPER_BINS)
$(VRAMCTL): $(CLI_MAIN_SRCS:%.c=$(O)/%.o) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $(filter %.o,$^) \
		-Wl,--start-group $(filter %.a,$^) -Wl,--end-group $(CLI_LDLIBS)
ALL_TARGETS += $(VRAMCTL)

# The commands' objects as an archive for the helpers, so that each takes
# only the files it uses (vramctl-top carried cdi, doctor and kernel). self.o,
# the mark the injected library looks for, is linked whole into each.
CLI_LIB := $(O)/libvr_cli.a
$(CLI_LIB): $(filter-out $(O)/src/cli/main.o $(O)/src/cli/self.o,$(CLI_MAIN_SRCS:%.c=$(O)/%.o))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

define CLI_HELPER_RULES
$(O)/src/cli/helper/main-$(1).o: src/cli/helper/helper_main.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_CFLAGS) -DVR_HELPER_CMD=cmd_$(1) -c $$< -o $$@
$(O)/libexec/vramctl-$(1): $(O)/src/cli/helper/main-$(1).o $(CLI_SRCS_$(1):%.c=$(O)/%.o) \
		$(O)/src/cli/self.o $(CLI_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(BASE_LDFLAGS) -o $$@ $$(filter %.o,$$^) \
		-Wl,--start-group $$(filter %.a,$$^) -Wl,--end-group $$(CLI_LIBS_$(1)) $$(CLI_LDLIBS)
ALL_TARGETS += $(O)/libexec/vramctl-$(1)
endef
$(foreach h,$(CLI_HELPERS),$(eval $(call CLI_HELPER_RULES,$(h))))

# The program `vramctl demo` runs: a stand-in for a preallocating framework.
# It loads the driver with dlopen, as TensorFlow and JAX do.
DEMO_APP := $(O)/libexec/vramctl-demo-app
$(DEMO_APP): $(O)/src/cli/demo_app/demo_app.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
ALL_TARGETS += $(DEMO_APP)

# The controller the injected library starts to park or restore its own
# process with the driver's checkpoint API (hook/ckpt.c): libc and
# dlopen, with vramctl's mark (self.c) so that the library stays out.
CHECKPOINT_HELPER := $(O)/libexec/vramctl-checkpoint
$(CHECKPOINT_HELPER): $(O)/src/cli/checkpoint/checkpoint.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $< -ldl -Wl,--export-dynamic-symbol=vramctl_cli_v1
ALL_TARGETS += $(CHECKPOINT_HELPER)

# The program `vramctl doctor` runs under a test cap (its interception
# self-test). Linked with -lcuda as CUDA C programs are; it reaches the
# driver every other way too (src/cli/doctor_probe/probe.c).
DOCTOR_PROBE := $(O)/libexec/vramctl-doctor-probe
$(DOCTOR_PROBE): $(O)/src/cli/doctor_probe/probe.o $(SIM_CUDA)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $< -L$(O)/sim -lcuda -ldl
ALL_TARGETS += $(DOCTOR_PROBE)

# doctor's pure half (checks, formats, ELF reading) on fixed inputs. (The
# monitor's library by its path: src/monitor/module.mk is read after this.)
$(O)/tests/cli/test_doctor: $(O)/tests/cli/test_doctor.o $(O)/src/cli/doctor_report.o \
		$(O)/libvr_monitor.a $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
TESTS += $(O)/tests/cli/test_doctor

# Another library replacing dlsym, for doctor's conflict and self-test checks.
# Never instrumented: a sanitizer runtime calls its dlsym before it is ready.
$(O)/tests/cli/libfakevgpu.so: tests/cli/fake_vgpu.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out $(SANFLAGS),$(BASE_CFLAGS)) -shared -o $@ $< -ldl
ALL_TARGETS += $(O)/tests/cli/libfakevgpu.so

# A program linking the CUDA 12 runtime (an empty stand-in library), for
# doctor's "driver older than the program's runtime" check: inspected, never run.
$(O)/tests/cli/cudart12-prog:
	@mkdir -p $(O)/tests/cli/fake-cudart
	printf '' | $(CC) -x c -shared -Wl,-soname,libcudart.so.12 \
		-o $(O)/tests/cli/fake-cudart/libcudart.so.12 -
	printf 'int main(void) { return 0; }\n' | $(CC) -x c -o $@ - \
		-x none -Wl,--no-as-needed $(O)/tests/cli/fake-cudart/libcudart.so.12
ALL_TARGETS += $(O)/tests/cli/cudart12-prog

demo: build-all
	$(VRAMCTL) demo

TEST_SCRIPTS += $(sort $(wildcard tests/cli/*.sh))

# The pure layout of top's columns, tested on fixed input.
$(O)/tests/cli/test_top_layout: $(O)/tests/cli/test_top_layout.o $(O)/src/cli/top_layout.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(O)/tests/cli/test_top_layout

# The multiarch triplet (Makefile), where the Debian package keeps the library.
$(O)/src/cli/paths.o: BASE_CFLAGS += -DVR_MULTIARCH='"$(MULTIARCH)"'
