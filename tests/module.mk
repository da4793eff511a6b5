# tests/: Check suites (UNIT_TESTS) and mount-level scripts (SHELL_TESTS).
# Every suite links $(BUILD)/tests/check_main.o, the main() they share (check_main.h); the
# modules name it by its path, as their rules are read before this file.
$(BUILD)/tests/check_main.o: CFLAGS += $(CFLAGS_CHECK)
-include tests/resolver.mk
