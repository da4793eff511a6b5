# pollcore/: the poll(2) event loop with an inline fd table. Pure C11 + POSIX/Linux: no libev,
# no GLib (libev appears only in bench/poll, as the peer it is measured against).
PC_LIB := $(BUILD)/libpollcore.a
PC_OBJS := $(addprefix $(BUILD)/pollcore/,pollcore.o pc_spin.o pc_cgroup.o)

$(PC_LIB): $(PC_OBJS)
	$(AR) rcs $@ $^

UNIT_TESTS += $(BUILD)/test_pollcore
$(BUILD)/tests/test_pollcore.o: CFLAGS += $(CFLAGS_CHECK)
$(BUILD)/test_pollcore: $(BUILD)/tests/test_pollcore.o $(BUILD)/tests/check_main.o $(PC_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK)

# libev has no .pc file on Debian.
BENCHES += $(BUILD)/bench_poll
BENCH_SCRIPTS += bench/poll/run.sh
$(BUILD)/bench_poll: $(BUILD)/bench/poll/bench_poll.o $(PC_LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lev -lm
