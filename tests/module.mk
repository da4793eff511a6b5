# tests/: Check suites (UNIT_TESTS) and mount-level scripts (SHELL_TESTS).
-include tests/resolver.mk
