# fusefs/: the chainfs daemon (libfuse3 low-level, GLib, json-glib) and its tools.
# the tree and the spec language are modules of several files each (tree_int.h and
# spec_int.h, internal to them, say which file holds what); tests/fuzz builds the same lists
CFS_TREE_SRCS := $(addprefix fusefs/,tree.c tree_entry.c tree_store.c tree_index.c tree_data.c \
	tree_rename.c)
CFS_SPEC_SRCS := $(addprefix fusefs/,spec.c spec_lex.c spec_make.c spec_gen.c spec_dump.c \
	spec_materialize.c spec_from.c)
CFS_CORE_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(CFS_TREE_SRCS) $(CFS_SPEC_SRCS)) \
	$(BUILD)/fusefs/inroot.o
CFS_LIB := $(BUILD)/libchainfs.a
$(CFS_LIB): $(CFS_CORE_OBJS)
	$(AR) rcs $@ $^

CFS_DAEMON_OBJS := $(addprefix $(BUILD)/fusefs/,main.o session.o gate.o ops.o ops_write.o ops_table.o \
	coherence.o follow.o optable.o links.o paths.o notify.o mt.o control.o control_cmds.o fault.o \
	ctlpath.o latency.o record.o record_log.o transport.o mountflags.o errname.o json.o)
$(BUILD)/fusefs/%.o: CFLAGS += $(CFLAGS_FUSE) -DG_LOG_DOMAIN=\"chainfs\"
# the FUSE-over-io_uring transport (transport.c) is built on Debian's liburing
CFLAGS_URING = $(shell pkg-config --cflags liburing)
LIBS_URING = $(shell pkg-config --libs liburing)
$(BUILD)/fusefs/transport.o: CFLAGS += $(CFLAGS_URING)

BINS += $(BUILD)/chainfs $(BUILD)/chainfsctl $(BUILD)/chainfs-sweep
TEST_BINS += $(BUILD)/cfs-probe
$(BUILD)/chainfs-sweep: $(BUILD)/fusefs/sweep.o $(BUILD)/fusefs/ctlpath.o $(BUILD)/fusefs/errname.o \
	$(BUILD)/fusefs/follow.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE)
$(BUILD)/chainfsctl: $(BUILD)/fusefs/chainfsctl.o $(BUILD)/fusefs/ctlpath.o \
	$(BUILD)/fusefs/replay.o $(BUILD)/fusefs/replay_line.o $(BUILD)/fusefs/replay_at.o \
	$(BUILD)/fusefs/errname.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE)
$(BUILD)/chainfs: $(CFS_DAEMON_OBJS) $(CFS_LIB) $(PC_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE) $(LIBS_URING) -lpthread
$(BUILD)/cfs-probe: $(BUILD)/tests/probe.o
	$(CC) $(LDFLAGS) -o $@ $^
TEST_BINS += $(BUILD)/cfs-mount-diff $(BUILD)/cfs-fsops
$(BUILD)/cfs-fsops: $(BUILD)/tests/fsops.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/cfs-mount-diff: $(BUILD)/tests/mount_diff.o
	$(CC) $(LDFLAGS) -o $@ $^

UNIT_TESTS += $(BUILD)/test_tree $(BUILD)/test_spec $(BUILD)/test_links $(BUILD)/test_latency
UNIT_TESTS += $(BUILD)/test_record
$(BUILD)/test_record: $(BUILD)/tests/test_record.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/record_log.o $(BUILD)/fusefs/errname.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE) -lpthread
$(BUILD)/tests/test_record.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
UNIT_TESTS += $(BUILD)/test_fault
$(BUILD)/test_fault: $(BUILD)/tests/test_fault.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/fault.o $(BUILD)/fusefs/optable.o $(BUILD)/fusefs/errname.o \
		$(BUILD)/fusefs/json.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_fault.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
$(BUILD)/test_latency: $(BUILD)/tests/test_latency.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/latency.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_latency.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
$(BUILD)/test_links: $(BUILD)/tests/test_links.o $(BUILD)/tests/check_main.o \
	$(BUILD)/fusefs/links.o $(BUILD)/fusefs/coherence.o $(BUILD)/fusefs/follow.o \
	$(BUILD)/fusefs/paths.o $(BUILD)/fusefs/notify.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_links.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
# the tree's suite: one binary, its files along the module's seams (tests/test_tree.h)
TEST_TREE_OBJS := $(addprefix $(BUILD)/tests/,test_tree.o test_tree_fixture.o test_tree_entry.o \
	test_tree_rename.o test_tree_data.o test_tree_attr.o test_tree_alloc.o)
$(BUILD)/test_tree: $(TEST_TREE_OBJS) $(BUILD)/tests/check_main.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
# test_spec fails the spec module's and the tree's own allocations one by one: --wrap
# redirects every object the link takes from $(CFS_LIB) (GLib's and libc's inner ones are not
# redirected)
CFS_SPEC_TEST_OBJS := $(addprefix $(BUILD)/tests/,test_spec.o test_spec_util.o test_spec_lex.o \
	test_spec_make.o test_spec_gen.o test_spec_dump.o test_spec_materialize.o)
$(BUILD)/test_spec: $(CFS_SPEC_TEST_OBJS) $(BUILD)/tests/check_main.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc -o $@ $^ $(LIBS_CHECK) \
		$(LIBS_FUSE)
$(TEST_TREE_OBJS) $(CFS_SPEC_TEST_OBJS): CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)

# one line a script, so that adding one never touches another
SHELL_TESTS += tests/mount_kernel.sh
SHELL_TESTS += tests/mount_lifecycle.sh
SHELL_TESTS += tests/mount_modes.sh
SHELL_TESTS += tests/conformance.sh
SHELL_TESTS += tests/mount_perms.sh
SHELL_TESTS += tests/control.sh
SHELL_TESTS += tests/mount_faults.sh
SHELL_TESTS += tests/spec_errors.sh
SHELL_TESTS += tests/stress.sh
SHELL_TESTS += tests/crash.sh
SHELL_TESTS += tests/mount_cache.sh
SHELL_TESTS += tests/fuse_mount.sh
SHELL_TESTS += tests/fuse_mount_args.sh
SHELL_TESTS += tests/mount_escape.sh
SHELL_TESTS += tests/mount_latency.sh
SHELL_TESTS += tests/mount_spin_quota.sh
SHELL_TESTS += tests/cli.sh
SHELL_TESTS += tests/sweep.sh
SHELL_TESTS += tests/mount_sparse.sh
SHELL_TESTS += tests/demo_output.sh
SHELL_TESTS += tests/mount_broken.sh
SHELL_TESTS += tests/mount_loops.sh
SHELL_TESTS += tests/mount_meta.sh
SHELL_TESTS += tests/mount_types.sh
SHELL_TESTS += tests/mount_fsops.sh
SHELL_TESTS += tests/mount_lines.sh
SHELL_TESTS += tests/mount_diff.sh
SHELL_TESTS += tests/mount_inval.sh
SHELL_TESTS += tests/control_dump.sh
SHELL_TESTS += tests/coherence.sh
SHELL_TESTS += tests/mount_server_coherence.sh
SHELL_TESTS += tests/record.sh
SHELL_TESTS += tests/replay_escape.sh
SHELL_TESTS += tests/mount_uring.sh
SHELL_TESTS += tests/mount_uring_fallback.sh
SHELL_TESTS += tests/mount_safe.sh
SHELL_TESTS += tests/materialize_safe.sh
SHELL_TESTS += tests/doc_examples.sh
SHELL_TESTS += tests/spec_from.sh
# check-uring runs them all again over the ring (CHAINFS_TRANSPORT=uring) but for those
# whose script says "# check: once: why"; "# check: alone: why" keeps a script from running
# beside another (tools/check.sh)

# make stress: the long run of the kernel cache coherence property (STRESS_STEPS random
# changes, each checked against a fresh mount of the daemon's dump; CHAINFS_SEED replays)
STRESS_STEPS ?= 1000
.PHONY: stress
stress: all
	CHAINFS_SEED=$${CHAINFS_SEED:-$$(date +%s)} CHAINFS_STEPS=$(STRESS_STEPS) BUILD=$(BUILD) \
		sh tests/coherence.sh

# spec: embedded default tree
# fusefs/default.spec becomes a C array of 0xHH bytes (od + sed: coreutils, no xxd), so any
# byte survives, ended by a NUL (a string literal this long is beyond what ISO C promises).
$(BUILD)/fusefs/default_spec.c: fusefs/default.spec
	@mkdir -p $(dir $@)
	{ echo '/* generated from fusefs/default.spec: do not edit */'; \
	  echo '#include "spec.h"'; \
	  echo 'const char cfs_default_spec[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1, /g'; \
	  echo '0};'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/fusefs/default_spec.o: $(BUILD)/fusefs/default_spec.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(CFS_LIB): $(BUILD)/fusefs/default_spec.o
# test_spec compares the embedded text with the source file
$(BUILD)/tests/test_spec_dump.o: CFLAGS += -DCFS_SRCDIR='"$(CURDIR)"'
# end spec: embedded default tree
