# slurm: the SPANK plugin (srun/sbatch/salloc --gpu-mem=SPEC) and its tests.
#
#   make slurm            build $(O)/slurm/vramctl.so (needs slurm/spank.h,
#                         Debian's libslurm-dev; skipped with a message without)
#   make install-slurm    install it into Slurm's plugin directory and the
#                         plugstack.conf.d snippet (DESTDIR, SLURM_PLUGIN_DIR,
#                         SLURM_CONF_DIR, VRAMCTL_LIBDIR override the paths)
#
# The pure policy (slurm/policy.c) builds and is unit-tested everywhere; only
# the plugin needs Slurm's header.
SLURM_PLUGIN := $(O)/slurm/vramctl.so
SLURM_POLICY_OBJ := $(O)/slurm/policy.o
SLURM_HAVE_HEADER := $(shell printf '\#include <slurm/spank.h>\n' | \
	$(CC) $(CFLAGS) -E -x c - >/dev/null 2>&1 && echo yes)

# Slurm's PluginDir: from the running configuration when there is one,
# else Debian's default.
SLURM_PLUGIN_DIR ?= $(or $(shell timeout 5 scontrol show config 2>/dev/null | \
	sed -n 's/^PluginDir *= *//p' | cut -d: -f1),/usr/lib/x86_64-linux-gnu/slurm-wlm)
SLURM_CONF_DIR ?= /etc/slurm
VRAMCTL_LIBDIR ?= /usr/local/lib/vramctl

# The monitor's library by its path: src/monitor/module.mk, which names it
# MONITOR_LIB, is read after this file (prerequisites expand at once).
SLURM_MONITOR_LIB := $(O)/libvr_monitor.a
$(O)/slurm/vramctl.so: $(O)/slurm/vramctl_spank.o $(O)/slurm/drvlimit.o $(O)/slurm/jobs.o \
		$(O)/slurm/guarantee.o $(SLURM_POLICY_OBJ) $(SLURM_MONITOR_LIB) $(LAUNCH_LIB) \
		$(REGISTRY_LIB) $(COMMON_LIB) slurm/vramctl.map
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -shared -Wl,--version-script=slurm/vramctl.map -o $@ \
		$(O)/slurm/vramctl_spank.o $(O)/slurm/drvlimit.o $(O)/slurm/jobs.o \
		$(O)/slurm/guarantee.o $(SLURM_POLICY_OBJ) \
		$(SLURM_MONITOR_LIB) $(LAUNCH_LIB) $(REGISTRY_LIB) $(COMMON_LIB) -ldl

# The test program a job runs: what one task sees of device 0.
$(O)/tests/slurm/gpuinfo: $(O)/tests/slurm/gpuinfo.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ -ldl

$(O)/tests/slurm/test_policy: $(O)/tests/slurm/test_policy.o $(SLURM_POLICY_OBJ) $(LAUNCH_LIB) \
		$(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^

TESTS += $(O)/tests/slurm/test_policy
# Skips (exit 77, saying why) where Slurm or the plugin is missing.
TEST_SCRIPTS += tests/slurm/cluster.sh tests/slurm/driver.sh

.PHONY: slurm install-slurm
ifeq ($(SLURM_HAVE_HEADER),yes)
ALL_TARGETS += $(SLURM_PLUGIN) $(O)/tests/slurm/gpuinfo
slurm: $(SLURM_PLUGIN) $(O)/tests/slurm/gpuinfo

install-slurm: $(SLURM_PLUGIN) $(HOOK_LIB)
	install -d $(DESTDIR)$(SLURM_PLUGIN_DIR) $(DESTDIR)$(VRAMCTL_LIBDIR) \
		$(DESTDIR)$(SLURM_CONF_DIR)/plugstack.conf.d
	install -m 0755 $(SLURM_PLUGIN) $(DESTDIR)$(SLURM_PLUGIN_DIR)/vramctl.so
	install -m 0755 $(HOOK_LIB) $(DESTDIR)$(VRAMCTL_LIBDIR)/libvramctl.so
	@if [ -e $(DESTDIR)$(SLURM_CONF_DIR)/plugstack.conf.d/vramctl.conf ]; then \
		echo "keeping $(DESTDIR)$(SLURM_CONF_DIR)/plugstack.conf.d/vramctl.conf"; \
	else \
		sed -e 's|@PLUGIN@|$(SLURM_PLUGIN_DIR)/vramctl.so|' \
		    -e 's|@LIB@|$(VRAMCTL_LIBDIR)/libvramctl.so|' slurm/vramctl.conf \
		    > $(DESTDIR)$(SLURM_CONF_DIR)/plugstack.conf.d/vramctl.conf; \
	fi
	@grep -qs 'plugstack.conf.d' $(DESTDIR)$(SLURM_CONF_DIR)/plugstack.conf || \
		echo "note: add 'include $(SLURM_CONF_DIR)/plugstack.conf.d/*.conf' to" \
		     "$(SLURM_CONF_DIR)/plugstack.conf"
else
slurm install-slurm:
	@echo "slurm: skipped: <slurm/spank.h> not found (apt-get install libslurm-dev)"
endif
