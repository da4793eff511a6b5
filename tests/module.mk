# tests/: Check suites (UNIT_TESTS) and mount-level scripts (SHELL_TESTS).
# Every suite links $(BUILD)/tests/check_main.o, the main() they share (check_main.h); the
# modules name it by its path, as their rules are read before this file.
$(BUILD)/tests/check_main.o: CFLAGS += $(CFLAGS_CHECK)
-include tests/resolver.mk

# cfs-race-check: a program's lstat-then-open, for the races made on purpose (mount_race.sh)
TEST_BINS += $(BUILD)/cfs-race-check
$(BUILD)/cfs-race-check: $(BUILD)/tests/race_check.o
	$(CC) $(LDFLAGS) -o $@ $^
SHELL_TESTS += tests/mount_race.sh
SHELL_TESTS += tests/mount_hold.sh
SHELL_TESTS += tests/mount_faults2.sh
# the symlink bug lab: each experiment 3 times, the temp dir checked before and after
SHELL_TESTS += tests/lab.sh
