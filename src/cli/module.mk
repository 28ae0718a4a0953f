# src/cli: the vramctl command. One file per subcommand; pure formatting
# code lives apart from terminal and network code so it can be tested.
CLI_SRCS := $(wildcard src/cli/*.c)
CLI_LDLIBS := -ldl
$(VRAMCTL): $(CLI_SRCS:%.c=$(O)/%.o) $(REGISTRY_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ $(CLI_LDLIBS)
ALL_TARGETS += $(VRAMCTL)
