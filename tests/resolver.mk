# Resolver suites and the test helpers they share.
TEST_SUPPORT_OBJS := $(BUILD)/tests/memtree.o
