# chainfs — a FUSE filesystem for symlink experiments.
# `make demo` and `make check` start from a fresh Debian 12 machine (run as root): both install
# what is missing first. Each module adds its own rules in its module.mk.

PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
OPT ?= -O2 -g
SAN ?=
CPPFLAGS += -D_GNU_SOURCE -Iresolver -Ipollcore -Ifusefs -Itests
CFLAGS := -std=c11 $(OPT) $(WARN) $(SAN) $(CFLAGS_EXTRA)
LDFLAGS += $(SAN)

# Evaluated when used, so that `make deps` can install pkg-config and the libraries first.
PKG_FUSE = $(shell pkg-config --cflags --libs fuse3)
PKG_GLIB = $(shell pkg-config --cflags --libs glib-2.0 json-glib-1.0)
PKG_CHECK = $(shell pkg-config --cflags --libs check)
CFLAGS_FUSE = $(shell pkg-config --cflags fuse3 glib-2.0 json-glib-1.0)
LIBS_FUSE = $(shell pkg-config --libs fuse3 glib-2.0 json-glib-1.0)
CFLAGS_CHECK = $(shell pkg-config --cflags check)
LIBS_CHECK = $(shell pkg-config --libs check)

# Filled by the modules.
BINS :=          # installed programs
UNIT_TESTS :=    # Check suites, run by check-unit (and under sanitizers by check-asan)
SHELL_TESTS :=   # integration scripts, run by check-integration
BENCHES :=       # bench programs built by `make bench`

.PHONY: all deps check check-run check-unit check-asan check-integration bench demo \
	install clean fuzz format
.DEFAULT_GOAL := all

include resolver/module.mk
-include pollcore/module.mk
-include fusefs/module.mk
include tests/module.mk
-include bench/module.mk
include tests/fuzz/fuzz.mk

all: $(BINS)

deps:
	@sh tools/deps.sh

# The whole suite: plain build, then again under AddressSanitizer + UBSan, the mounts, each
# fuzz target for a minute, and a seconds-long smoke run of the benchmarks.
check: deps
	$(MAKE) check-unit
	$(MAKE) check-asan
	$(MAKE) check-integration
	$(MAKE) check-fuzz
	$(MAKE) bench-run BENCH_QUICK=1

check-unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; CK_DEFAULT_TIMEOUT=600 $$t; done

ASAN_VARS = BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
check-asan:
	$(MAKE) $(ASAN_VARS) check-unit build-asan/chainfs

check-integration: all $(SHELL_TESTS)
	@set -e; for t in $(SHELL_TESTS); do echo "== $$t"; BUILD=$(BUILD) sh $$t; done

bench: deps
	$(MAKE) bench-run

demo: deps
	$(MAKE) all
	sh tools/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	for m in man/*.1; do [ -e "$$m" ] && install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man1/; done; true
	for m in man/*.5; do [ -e "$$m" ] && install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man5/; done; true

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-fuzz

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
