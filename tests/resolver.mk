# Resolver suites and the test helpers they share.
# rtree (random trees, materialized) is reusable by daemon tests, hence in TEST_SUPPORT_OBJS.
TEST_SUPPORT_OBJS := $(BUILD)/tests/memtree.o $(BUILD)/tests/rtree.o
RS_TEST_OBJS := $(BUILD)/tests/refresolve.o $(BUILD)/tests/alloc_count.o
RS_SUITES := $(addprefix $(BUILD)/,test_resolver_edge test_resolver_diff test_resolver_deep \
	test_resolver_loops)
UNIT_TESTS += $(RS_SUITES)

$(BUILD)/tests/test_resolver%.o: CFLAGS += $(CFLAGS_CHECK)

$(RS_SUITES): $(BUILD)/%: $(BUILD)/tests/%.o $(BUILD)/tests/check_main.o $(RS_TEST_OBJS) \
		$(TEST_SUPPORT_OBJS) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) -lpthread

# `rtree-materialize SEED DIR`: the random tree of SEED, as real files, for manual poking.
$(BUILD)/rtree-materialize: $(BUILD)/tests/rtree_materialize.o $(TEST_SUPPORT_OBJS) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^

# bench/resolver: rs_resolve vs the recursive reference vs the kernel's stat() on tmpfs.
BENCHES += $(BUILD)/bench_resolver
BENCH_SCRIPTS += bench/resolver/run.sh
$(BUILD)/bench_resolver: $(BUILD)/bench/resolver/bench_resolver.o $(BUILD)/tests/refresolve.o \
		$(BUILD)/tests/memtree.o $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread
