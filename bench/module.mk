# bench/: `make bench` runs every script in BENCH_SCRIPTS (modules add theirs) and collects
# bench/results/*.csv, *.png and a Markdown summary. BENCH_QUICK=1 makes a seconds-long smoke run.
BENCH_SCRIPTS ?=
.PHONY: bench-run bench-build
bench-build: all $(BENCHES)
bench-run: bench-build
	@mkdir -p bench/results
	@set -e; for s in $(BENCH_SCRIPTS); do echo "== $$s"; BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) sh $$s; done
