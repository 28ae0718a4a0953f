# vramctl - top-level build.
#
#   make                      build everything (library, CLI, simulators)
#   make test                 build and run the whole test suite
#   make test SANITIZE=address   the same under ASan+UBSan
#   make test SANITIZE=thread    the same under TSan
#   make check                the README's test command: all of the above, the
#                             format check (make format-check) and the layers
#                             check (make layers)
#   make CC=clang             any of the above with clang
#   make demo                 run the demo on the simulated GPU
#
# Every module keeps its own rules in a module.mk beside its sources; this
# file only sets flags, output folders and the shared targets. Outputs go to
# $(O) = build/<compiler>-<variant>, so several builds live side by side.

BUILD ?= build
SANITIZE ?=
DRIVER ?= sim

ifeq ($(origin CC),default)
  CC := gcc
endif
CCNAME := $(notdir $(firstword $(CC)))
ifeq ($(SANITIZE),)
  VARIANT := release
  SANFLAGS :=
else ifeq ($(SANITIZE),address)
  VARIANT := asan
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SANITIZE),thread)
  VARIANT := tsan
  SANFLAGS := -fsanitize=thread
else
  $(error SANITIZE must be empty, 'address' or 'thread')
endif
O := $(BUILD)/$(CCNAME)-$(VARIANT)

WARNINGS := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wundef -Wpointer-arith -Wvla -Wcast-align -Wwrite-strings
CFLAGS ?= -O2 -g
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -pthread $(WARNINGS) $(CFLAGS) $(CPPFLAGS) \
	$(SANFLAGS) -I. -Isrc -Iinclude -MMD -MP
ifneq ($(WERROR),)
  BASE_CFLAGS += -Werror
endif
BASE_LDFLAGS := -pthread $(SANFLAGS) $(LDFLAGS)

# What each module builds, named here so any module can depend on another's.
COMMON_LIB := $(O)/libvr_common.a
REGISTRY_LIB := $(O)/libvr_registry.a
LAUNCH_LIB := $(O)/libvr_launch.a
HOOK_LIB := $(O)/libvramctl.so
VRAMCTL := $(O)/vramctl
SIM_CUDA := $(O)/sim/libcuda.so.1
SIM_NVML := $(O)/sim/libnvidia-ml.so.1

# The version has one source, debian/changelog's first line ("vramctl (X)"):
# the Debian packages and src/common/version.h (`vramctl --version`, the
# build_info metric) both take it from there.
VERSION := $(shell awk 'NR == 1 { gsub(/[()]/, "", $$2); print $$2 }' debian/changelog)
BASE_CFLAGS += -DVRAMCTL_VERSION_TEXT='"$(VERSION)"'

# Debian's multiarch triplet: the packaged library lives in
# /usr/lib/<triplet>/vramctl/, and vramctl looks there (src/cli/paths.c).
ifeq ($(origin MULTIARCH),undefined)
  MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
	gcc -print-multiarch 2>/dev/null)
endif

# Filled in by the module.mk files.
ALL_TARGETS :=
TESTS :=
TEST_SCRIPTS :=

.PHONY: all test check demo clean format format-check install
# Keep intermediate objects: they are reused by several links.
.SECONDARY:
all: build-all

$(O)/%.o: %.c debian/changelog
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -c $< -o $@

include $(sort $(wildcard src/*/module.mk sim/module.mk tests/module.mk bench/module.mk slurm/module.mk))

.PHONY: build-all
build-all: $(ALL_TARGETS)

test: build-all $(TESTS)
	@tests/run --build $(O) --driver $(DRIVER) $(if $(T),--filter "$(T)") $(TESTS) $(TEST_SCRIPTS)

# The test programs and scripts of this build, one per line (for running the
# suite elsewhere, e.g. bench/gpu/device.sh against a real driver).
.PHONY: list-tests
list-tests:
	@printf '%s\n' $(TESTS) $(TEST_SCRIPTS)

# Fails when an include or a call between files goes up a layer or round in a
# circle (tests/layers.py; the layers are src/LAYERS and each directory's LAYERS).
.PHONY: layers
layers: build-all
	@tests/layers.py --objs $(O)

# The README's test command: every build variant's suite (tests/check).
check:
	@tests/check

# Installed layout (vramctl finds its files relative to itself, paths.c):
#   $(PREFIX)/bin/vramctl
#   $(LIBDIR)/libvramctl.so                     the injected library
#   $(LIBDIR)/sim/                              the simulated GPU, for the demo
#   $(LIBEXECDIR)/vramctl-demo-app
#   $(LIBEXECDIR)/vramctl-doctor-probe         (doctor's self-test)
#   $(LIBEXECDIR)/vramctl-checkpoint           (parking, #36: the library's controller)
#   $(LIBEXECDIR)/vramctl-NAME                 heavy commands (src/cli/module.mk)
#   $(LIBDIR)/ld.so.preload                     one line naming the library (CDI specs mount it)
#   $(PREFIX)/share/man/man1/vramctl*.1, man5/vramctl.conf.5
#   $(BASHCOMPDIR)/vramctl, $(ZSHCOMPDIR)/_vramctl   shell completion
#   $(SYSCONFDIR)/vramctl/vramctl.conf          the admin's file (kept if present)
#   $(TMPFILESDIR)/vramctl.conf                 systemd-tmpfiles: /run/vramctl/jobs at boot
# LIBDIR may be $(PREFIX)/lib/vramctl or $(PREFIX)/lib/<triplet>/vramctl
# (the Debian package's, debian/rules).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib/vramctl
LIBEXECDIR ?= $(PREFIX)/libexec/vramctl
SYSCONFDIR ?= /etc
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
# What an installation holds (not the tests): `make programs`.
.PHONY: programs
programs: $(VRAMCTL) $(CLI_HELPER_BINS) $(HOOK_LIB) $(HOOK_PRELOAD) $(SIM_CUDA) $(SIM_NVML) $(DEMO_APP) $(CHECKPOINT_HELPER) \
	$(DOCTOR_PROBE)
install: programs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/sim $(DESTDIR)$(LIBEXECDIR) \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(SYSCONFDIR)/vramctl \
		$(DESTDIR)$(TMPFILESDIR)
	install -m 0755 $(VRAMCTL) $(DESTDIR)$(PREFIX)/bin/vramctl
	install -m 0644 $(HOOK_LIB) $(DESTDIR)$(LIBDIR)/libvramctl.so
	install -m 0644 $(HOOK_PRELOAD) $(DESTDIR)$(LIBDIR)/ld.so.preload
	install -m 0644 $(SIM_CUDA) $(SIM_NVML) $(DESTDIR)$(LIBDIR)/sim/
	install -m 0755 $(DEMO_APP) $(DOCTOR_PROBE) $(CHECKPOINT_HELPER) $(CLI_HELPER_BINS) $(DESTDIR)$(LIBEXECDIR)/
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 etc/vramctl.tmpfiles $(DESTDIR)$(TMPFILESDIR)/vramctl.conf
	install -m 0644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	$(VRAMCTL) completion bash >$(DESTDIR)$(BASHCOMPDIR)/vramctl
	$(VRAMCTL) completion zsh >$(DESTDIR)$(ZSHCOMPDIR)/_vramctl
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/vramctl/vramctl.conf ]; then \
		echo "keeping $(DESTDIR)$(SYSCONFDIR)/vramctl/vramctl.conf"; \
	else \
		install -m 0644 etc/vramctl.conf $(DESTDIR)$(SYSCONFDIR)/vramctl/vramctl.conf; \
	fi

# The Debian packages vramctl and vramctl-slurm (debian/), built with
# dpkg-buildpackage from a copy of the tree's files (tracked and new, not
# ignored ones), into $(BUILD)/deb/. The package build takes none of this
# make's variables (CC, SANITIZE, WERROR): it is debian/rules' own. It runs
# one job per CPU unless DEB_BUILD_OPTIONS says parallel=N (a build
# daemon's, dpkg-buildpackage -jN's).
DEB_DIR := $(BUILD)/deb
.PHONY: deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/vramctl-$(VERSION)
	git ls-files -z -c -o --exclude-standard | \
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | \
		tar -xf - -C $(DEB_DIR)/vramctl-$(VERSION)
	cd $(DEB_DIR)/vramctl-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		DEB_BUILD_OPTIONS="$$(case " $$DEB_BUILD_OPTIONS " in *" parallel="*) ;; \
		*) echo "parallel=$$(nproc) " ;; esac)$$DEB_BUILD_OPTIONS" dpkg-buildpackage -b -us -uc
	rm -rf $(DEB_DIR)/vramctl-$(VERSION)
	@ls $(DEB_DIR)/*.deb

# The C files of the tree: tracked ones in a git clone, else every one
# outside the build folders.
C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || \
	find . -path ./$(BUILD) -prune -o -name '*.[ch]' -print)

format:
	clang-format -i $(C_FILES)

# Fails, naming each file and line, when a C file is not as clang-format
# (.clang-format) would write it; `make format` fixes them.
format-check:
	@command -v clang-format >/dev/null || \
		{ echo "format-check: clang-format is not installed"; exit 1; }
	@clang-format --dry-run --Werror $(C_FILES)

clean:
	rm -rf $(BUILD)

-include $(shell find $(O) -name '*.d' 2>/dev/null)
