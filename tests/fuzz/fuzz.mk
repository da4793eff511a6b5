# tests/fuzz/: libFuzzer targets under ASan + UBSan, built with clang into build-fuzz/
# (whatever CC and BUILD say), so they never mix with build/ or build-asan/ objects.
#   make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="spec control"]   each target N seconds (60)
#   make check-fuzz                                           each target 10 s, as `make check`
# A crash leaves its input in build-fuzz/crashes/ and prints the command that replays it.
# tests/fuzz/README.md says what each target checks.

FUZZ_BUILD := build-fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= spec spec_line resolve control gate
# make check's time per target (.ci/run's: 20): the committed seeds already reach the
# coverage 60 s from the old seeds did (tests/fuzz/README.md), so 10 s goes past it
FUZZ_CHECK_SECONDS ?= 10
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=c11 -O1 -g -fno-omit-frame-pointer $(WARN) $(FUZZ_SAN) \
	-fsanitize=fuzzer-no-link $(shell pkg-config --cflags glib-2.0)
FUZZ_LIBS = $(shell pkg-config --libs glib-2.0)

# Everything the targets exercise is compiled with coverage instrumentation.
FUZZ_OBJS := $(addprefix $(FUZZ_BUILD)/,resolver/resolver.o $(CFS_TREE_SRCS:.c=.o) \
	$(CFS_SPEC_SRCS:.c=.o) tests/memtree.o tests/refresolve.o \
	tests/fuzz/fuzz_util.o)
# control and gate: the daemon's files but the mount's life (session.c) and the program
# (main.c), on a session without a mount (control: the control code, which reaches the gate
# for holds and the handlers through it; gate: the request gate with libfuse and every
# handler). Compiled as the daemon's own files are (fusefs/module.mk).
FUZZ_GATE_OBJS := $(patsubst $(BUILD)/%,$(FUZZ_BUILD)/%,$(filter-out %/main.o %/session.o, \
	$(CFS_DAEMON_OBJS) $(PC_OBJS)))
FUZZ_CONTROL_OBJS := $(FUZZ_GATE_OBJS)
$(FUZZ_GATE_OBJS) $(FUZZ_BUILD)/tests/fuzz/fuzz_gate.o $(FUZZ_BUILD)/tests/fuzz/fuzz_control.o: \
	FUZZ_CFLAGS += $(CFLAGS_FUSE) -DG_LOG_DOMAIN=\"chainfs\"
FUZZ_BINS := $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZ_TARGETS))
FUZZ_MAIN_OBJS := $(patsubst %,$(FUZZ_BUILD)/tests/fuzz/fuzz_%.o,$(FUZZ_TARGETS))
# kept: make would delete them as intermediates of the fuzz_% rule
.SECONDARY: $(FUZZ_OBJS) $(FUZZ_MAIN_OBJS) $(FUZZ_CONTROL_OBJS) $(FUZZ_GATE_OBJS)

.PHONY: fuzz fuzz-build check-fuzz

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) sh tests/fuzz/run.sh $(FUZZ_TARGETS)

# run.sh itself, not through `make fuzz`: FUZZ_CHECK_SECONDS per target whatever FUZZ_SECONDS says,
# and its status (failed, or interrupted by a signal) is what make sees.
check-fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_CHECK_SECONDS) FUZZ_BUILD=$(FUZZ_BUILD) sh tests/fuzz/run.sh \
		$(FUZZ_TARGETS)

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)

$(FUZZ_BUILD)/fusefs/transport.o: FUZZ_CFLAGS += $(CFLAGS_URING)
$(FUZZ_BUILD)/fuzz_control: $(FUZZ_BUILD)/tests/fuzz/fuzz_control.o $(FUZZ_OBJS) \
		$(FUZZ_CONTROL_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_FUSE) $(LIBS_URING) -lpthread

$(FUZZ_BUILD)/fuzz_gate: $(FUZZ_BUILD)/tests/fuzz/fuzz_gate.o $(FUZZ_OBJS) $(FUZZ_GATE_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_FUSE) $(LIBS_URING) -lpthread

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call show,CC,$@)$(FUZZ_CC) $(CPPFLAGS) -Itests/fuzz $(FUZZ_CFLAGS) -MMD -MP $(addprefix -MT ,$(DEP_NAMES)) -c -o $@ $<

-include $(wildcard $(FUZZ_BUILD)/*/*.d $(FUZZ_BUILD)/*/*/*.d)

# `make fuzz-cov`: line coverage of the library code reached by the scratch corpora
# (build-fuzz/corpus/*), from a separate source-coverage build (no sanitizers).
FUZZ_COV := $(FUZZ_BUILD)/cov
FUZZ_COV_SRCS := resolver/resolver.c $(CFS_TREE_SRCS) $(CFS_SPEC_SRCS) tests/memtree.c \
	tests/refresolve.c tests/fuzz/fuzz_util.c
# what fuzz_control links besides (FUZZ_CONTROL_OBJS), and the libraries they need
FUZZ_COV_EXTRA_control = $(patsubst $(FUZZ_BUILD)/%.o,%.c,$(FUZZ_CONTROL_OBJS)) \
	$(CFLAGS_FUSE) $(CFLAGS_URING) $(LIBS_FUSE) $(LIBS_URING) -lpthread
FUZZ_COV_EXTRA_gate = $(patsubst $(FUZZ_BUILD)/%.o,%.c,$(FUZZ_GATE_OBJS)) \
	$(CFLAGS_FUSE) $(CFLAGS_URING) $(LIBS_FUSE) $(LIBS_URING) -lpthread
.PHONY: fuzz-cov
fuzz-cov:
	@mkdir -p $(FUZZ_COV)
	@set -e; $(foreach t,$(FUZZ_TARGETS), \
		$(FUZZ_CC) $(CPPFLAGS) -Itests/fuzz -std=c11 -O0 -g -fsanitize=fuzzer \
			-fprofile-instr-generate -fcoverage-mapping \
			$$(pkg-config --cflags glib-2.0) -o $(FUZZ_COV)/fuzz_$(t) \
			tests/fuzz/fuzz_$(t).c $(FUZZ_COV_SRCS) $(FUZZ_COV_EXTRA_$(t)) $(FUZZ_LIBS); \
		mkdir -p $(FUZZ_BUILD)/corpus/$(t); \
		LLVM_PROFILE_FILE=$(FUZZ_COV)/$(t).profraw $(FUZZ_COV)/fuzz_$(t) -runs=0 \
			tests/fuzz/corpus/$(t) $(FUZZ_BUILD)/corpus/$(t) >/dev/null 2>&1;)
	llvm-profdata merge -o $(FUZZ_COV)/all.profdata $(FUZZ_COV)/*.profraw
	llvm-cov report $(FUZZ_COV)/fuzz_$(firstword $(FUZZ_TARGETS)) \
		$(foreach t,$(wordlist 2,9,$(FUZZ_TARGETS)),-object $(FUZZ_COV)/fuzz_$(t)) \
		-instr-profile=$(FUZZ_COV)/all.profdata resolver/resolver.c $(CFS_TREE_SRCS) \
		$(CFS_SPEC_SRCS) tests/refresolve.c $(if $(filter control,$(FUZZ_TARGETS)),fusefs/control.c)
