# src/monitor: the monitor behind `vramctl status`, `top` and `export`:
# NVML (dlopen'ed) and the registry's snapshot joined into one model
# (collect.c, nvml.c), and pure formatters (format.c) tested on fixed models.
MONITOR_LIB := $(O)/libvr_monitor.a
MONITOR_SRCS := $(wildcard src/monitor/*.c)
$(MONITOR_LIB): $(MONITOR_SRCS:%.c=$(O)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
ALL_TARGETS += $(MONITOR_LIB)
# The CLI links it (src/cli/module.mk names it in CLI_LDLIBS).
$(CLI_PROGRAMS): $(MONITOR_LIB)

# Pure formatter goldens: fixed models -> tests/monitor/golden/*.
$(O)/tests/monitor/test_format: $(O)/tests/monitor/test_format.o $(MONITOR_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
# The join of NVML rows and registry records (NSpid, start times, dead records).
$(O)/tests/monitor/test_merge: $(O)/tests/monitor/test_merge.o $(MONITOR_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
TESTS += $(O)/tests/monitor/test_format $(O)/tests/monitor/test_merge
# Container IDs and pod UIDs from /proc/PID/cgroup: a table of real shapes.
$(O)/tests/monitor/test_cgroup_id: $(O)/tests/monitor/test_cgroup_id.o $(MONITOR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
# Identity on a fake /proc (cgroup, environ), shown in JSON and Prometheus.
$(O)/tests/monitor/test_identity: $(O)/tests/monitor/test_identity.o $(MONITOR_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
# Recorded cgroups checked against cgroup.procs, on a fake tree.
$(O)/tests/monitor/test_cgcheck: $(O)/tests/monitor/test_cgcheck.o $(MONITOR_LIB) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^
TESTS += $(O)/tests/monitor/test_cgroup_id $(O)/tests/monitor/test_identity \
	$(O)/tests/monitor/test_cgcheck
# Integration: real programs on the simulated GPU (they need the holder).
TEST_SCRIPTS += tests/monitor/status_sim.sh tests/monitor/top_tmux.sh tests/monitor/export_http.sh \
	tests/monitor/export_starve.sh tests/monitor/status_escape.sh tests/monitor/status_spill.sh \
	tests/monitor/status_registry.sh tests/monitor/status_dead.sh tests/monitor/status_card.sh \
	tests/monitor/status_drvlimit.sh tests/monitor/status_guarantee.sh \
	tests/monitor/export_hami.sh tests/monitor/export_privs.sh tests/monitor/exporter_manifest.sh \
	tests/monitor/status_identity.sh tests/monitor/status_users.sh tests/monitor/status_denials.sh \
	tests/monitor/status_elsewhere.sh
test: $(O)/tests/monitor/holder

# A GPU program for the integration tests: allocates, says "ready", holds
# until stdin closes.
$(O)/tests/monitor/holder: $(O)/tests/monitor/holder.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
ALL_TARGETS += $(O)/tests/monitor/holder

# A member of a group's books with an overhead charge and a counting, without
# a driver (status_card.sh).
$(O)/tests/monitor/books_member: $(O)/tests/monitor/books_member.o $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl
ALL_TARGETS += $(O)/tests/monitor/books_member
test: $(O)/tests/monitor/books_member

# The NVML reader against fake NVML libraries with 32-byte (R535) and 24-byte
# _v3 entries.
$(O)/tests/monitor/fake-nvml-%/libnvidia-ml.so.1: tests/monitor/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -DFAKE_NVML_STRIDE=$* -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< $(BASE_LDFLAGS)
$(O)/tests/monitor/test_nvml: $(O)/tests/monitor/test_nvml.o $(MONITOR_LIB) $(COMMON_LIB) \
		$(O)/tests/monitor/fake-nvml-32/libnvidia-ml.so.1 $(O)/tests/monitor/fake-nvml-24/libnvidia-ml.so.1
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $(filter %.o %.a,$^) -ldl
TESTS += $(O)/tests/monitor/test_nvml
