# chainfs — a FUSE filesystem for symlink experiments.
# `make demo` and `make check` start from a fresh Debian 12 machine (run as root): both install
# what is missing first (tools/deps.sh). Each module adds its own rules in its module.mk.
# Builds print a short "CC file" line per compile; V=1 prints every command in full.

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc

WARN := -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
OPT ?= -O2 -g
SAN ?=
CPPFLAGS += -D_GNU_SOURCE -Iresolver -Ipollcore -Itree -Ispec -Ifusefs -Icli -Itests
CFLAGS := -std=c11 $(OPT) $(WARN) $(SAN) $(CFLAGS_EXTRA)
LDFLAGS += $(SAN)

# Evaluated when used, so that `make deps` can install pkg-config and the libraries first.
PKG_FUSE = $(shell pkg-config --cflags --libs fuse3)
PKG_GLIB = $(shell pkg-config --cflags --libs glib-2.0 json-glib-1.0)
PKG_CHECK = $(shell pkg-config --cflags --libs check)
# the libfuse API the daemon is written against, for every file that includes its headers
# (fuse_common.h refuses to build without it)
CFLAGS_FUSE = $(shell pkg-config --cflags fuse3 glib-2.0 json-glib-1.0) -DFUSE_USE_VERSION=312
LIBS_FUSE = $(shell pkg-config --libs fuse3 glib-2.0 json-glib-1.0)
CFLAGS_CHECK = $(shell pkg-config --cflags check)
LIBS_CHECK = $(shell pkg-config --libs check)

# Filled by the modules.
BINS :=          # installed programs
TEST_BINS :=     # built with them, for the tests only (never installed)
UNIT_TESTS :=    # Check suites, run by check-unit (and under sanitizers by check-asan)
SHELL_TESTS :=   # integration scripts, run by check-integration
BENCHES :=       # bench programs built by `make bench`

.PHONY: all deps format format-check check check-run asan-daemon print-cppflags check-unit check-asan check-integration check-uring bench demo \
	install clean fuzz format lab
.DEFAULT_GOAL := all

ifneq ($(V),1)
.SILENT:
endif
MAKEFLAGS += --no-print-directory
# $(call show,WHAT,FILE): the short line that stands for a command (nothing with V=1)
show = $(if $(filter 1,$(V)),,printf '  %-4s %s\n' '$(1)' '$(2)';)

include resolver/module.mk
include pollcore/module.mk
include tree/module.mk
include spec/module.mk
include fusefs/module.mk
include cli/module.mk
include tests/module.mk
include bench/module.mk
include tests/fuzz/fuzz.mk

all: $(BINS) $(TEST_BINS)

deps:
	sh tools/deps.sh check

# The whole suite, through tools/check.sh: the plain build and its Check suites; then the same
# suites under AddressSanitizer + UBSan and each fuzz target for FUZZ_CHECK_SECONDS, one at a
# time as a side job, beside the mount scripts over /dev/fuse and again over the ring in one
# pool (stress.sh's load soak STRESS_SECONDS a transport), and a seconds-long smoke run of the
# benchmarks among them (about 14 minutes on 2 CPUs; .ci/run soaks and fuzzes twice as long).
# One line per suite, the output in $(BUILD)/check/*.log, and last the total "N passed, N
# failed"; every suite runs even after a failure, and any failure makes the exit status
# non-zero.
STRESS_SECONDS ?= 20
ASAN_OPT := -O1 -g -fno-omit-frame-pointer
ASAN_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_VARS = BUILD=build-asan OPT="$(ASAN_OPT)" SAN="$(ASAN_SAN)"
UNIT_SCRIPTS := tests/check_summary.sh tests/callgraph.sh tests/build_deps.sh
CHECK = MAKE="$(MAKE)" BUILD="$(BUILD)" UNIT_TESTS="$(UNIT_TESTS)" \
	UNIT_SCRIPTS="$(UNIT_SCRIPTS)" SHELL_TESTS="$(SHELL_TESTS)" FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	FUZZ_CHECK_SECONDS="$(FUZZ_CHECK_SECONDS)" STRESS_SECONDS="$(STRESS_SECONDS)" \
	ASAN_UNIT_TESTS="$(patsubst $(BUILD)/%,build-asan/%,$(UNIT_TESTS))" \
	ASAN_OPT="$(ASAN_OPT)" ASAN_SAN="$(ASAN_SAN)" BENCH_SCRIPTS="$(BENCH_SCRIPTS)" \
	V="$(V)" bash tools/check.sh
check: deps
	$(CHECK) unit all

check-unit:
	$(CHECK) unit

check-asan:
	$(CHECK) asan

# the mount scripts that stress the daemon's error paths run the ASan one (build-asan/chainfs,
# and replay_escape its chainfsctl), built here once: scripts side by side must not each
# build them (two makes linking one file: one runs it while the other has removed it)
asan-daemon:
	$(MAKE) $(ASAN_VARS) build-asan/chainfs build-asan/chainfsctl

check-integration: all asan-daemon
	$(CHECK) integration

check-uring: all asan-daemon
	$(CHECK) uring

bench: deps
	$(MAKE) bench-run

# The symlink bug lab (lab/, man/chainfs-lab.1): every experiment LAB_RUNS times in each
# follow mode it applies to, with the programs Debian installs (PATH without the caller's own
# directories, which may hold other builds of them); the table on stdout, exit status 0 when
# every experiment gave one outcome in all its runs. LAB_ARGS: more of chainfs-lab's
# arguments (experiment names, --transport uring, --json).
LAB_RUNS ?= 20
LAB_ARGS ?=
lab: deps
	$(MAKE) all
	PATH=/usr/sbin:/usr/bin:/sbin:/bin BUILD=$(BUILD) lab/chainfs-lab --runs $(LAB_RUNS) $(LAB_ARGS)

# make demo needs only the build's packages and fuse3
demo:
	sh tools/deps.sh demo
	$(MAKE) all
	BUILD=$(BUILD) sh tools/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 fuse-mount.sh $(DESTDIR)$(PREFIX)/bin/chainfs-mount
	install -m 755 lab/chainfs-lab $(DESTDIR)$(PREFIX)/bin/chainfs-lab
	install -d $(DESTDIR)$(PREFIX)/share/chainfs/lab
	install -m 644 lab/*.sh $(DESTDIR)$(PREFIX)/share/chainfs/lab/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 tools/completion.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/chainfsctl
	ln -sf chainfsctl $(DESTDIR)$(PREFIX)/share/bash-completion/completions/chainfs
	for m in man/*.1; do [ -e "$$m" ] && install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/; done; true
	for m in man/*.5; do [ -e "$$m" ] && install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man5/; done; true

# Every C file as .clang-format says; make check runs format-check first.
FORMAT := clang-format-14
C_SOURCES = $(shell find resolver pollcore tree spec fusefs cli tests bench -name '*.[ch]')
format:
	$(FORMAT) -i $(C_SOURCES)
format-check:
	$(FORMAT) --dry-run -Werror $(C_SOURCES)

# the preprocessor flags every C file is compiled with (tools/callgraph.sh reads them)
print-cppflags:
	echo $(CPPFLAGS) $(CFLAGS_FUSE) $(CFLAGS_URING)

clean:
	rm -rf build build-asan build-fuzz

# Each object's header list names it both as build/x.o and as /abs/build/x.o: a make run with
# an absolute BUILD (the tests' make install) must not hide a changed header from a later one
# with the relative BUILD, which would link objects built against two layouts of a struct.
DEP_NAMES = $(sort $(patsubst $(CURDIR)/%,%,$(abspath $@)) $(abspath $@))
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call show,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP $(addprefix -MT ,$(DEP_NAMES)) -c -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
