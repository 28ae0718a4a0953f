# src/common: pure helpers shared by the library, the CLI and the Slurm
# plugin (size grammar, ...). No dependency beyond libc.
COMMON_SRCS := $(wildcard src/common/*.c)
$(COMMON_LIB): $(COMMON_SRCS:%.c=$(O)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
ALL_TARGETS += $(COMMON_LIB)
