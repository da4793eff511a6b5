# bench/: `make bench` runs every script in BENCH_SCRIPTS (modules add theirs) and collects
# bench/results/*.csv, *.png and a Markdown summary. BENCH_QUICK=1 makes a seconds-long smoke run.
BENCH_SCRIPTS ?=

# Mount-level benchmarks (bench/README.md): walks against tmpfs and bindfs, chains through the
# daemon, the daemon's memory and start-up time. They mount, so they need root and /dev/fuse.
BENCHES += $(BUILD)/bench_timeit $(BUILD)/bench_chains $(BUILD)/bench_treemem
BENCH_SCRIPTS += bench/walk/run.sh bench/chains/run.sh bench/memory/run.sh
# The request transports side by side (/dev/fuse, io_uring; with and without the spin), and
# the latency distribution of one round trip (rtt: fstat() on a mount with attr_timeout=0).
BENCHES += $(BUILD)/bench_rtt
BENCH_SCRIPTS += bench/transport/run.sh

$(BUILD)/bench_timeit: $(BUILD)/bench/walk/bench_timeit.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/bench_chains: $(BUILD)/bench/chains/bench_chains.o $(BUILD)/fusefs/errname.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/bench_rtt: $(BUILD)/bench/transport/rtt.o
	$(CC) $(LDFLAGS) -o $@ $^ -lm
# The tree's own accounting (cfs_tree_stats) for the memory bench: loads a spec in-process.
$(BUILD)/bench/memory/bench_treemem.o: CFLAGS += $(CFLAGS_FUSE)
$(BUILD)/bench_treemem: $(BUILD)/bench/memory/bench_treemem.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE)

.PHONY: bench-run bench-build bench-summary
bench-build: all $(BENCHES)
bench-run: bench-build
	@mkdir -p bench/results
	@set -e; for s in $(BENCH_SCRIPTS); do echo "== $$s"; BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) sh $$s; done
	@BENCH_QUICK=$(BENCH_QUICK) sh bench/summary.sh
# The summary alone, from the results already in bench/results (or tmp/quick).
bench-summary:
	@BENCH_QUICK=$(BENCH_QUICK) sh bench/summary.sh
