# fusefs/: the chainfs daemon (libfuse3 low-level, GLib, json-glib), on the tree and spec
# libraries (tree/, spec/); ctlpath, errname and follow are shared with the clients (cli/).
CFS_DAEMON_OBJS := $(addprefix $(BUILD)/fusefs/,main.o session.o gate.o ops.o ops_write.o ops_xattr.o \
	ops_table.o coherence.o follow.o optable.o links.o paths.o notify.o mt.o control.o control_cmds.o \
	fault.o fault_parse.o fault_json.o ctlpath.o change.o latency.o record.o record_log.o transport.o \
	mountflags.o errname.o json.o)
# the daemon, its libraries and its clients log as "chainfs"
$(BUILD)/fusefs/%.o $(BUILD)/tree/%.o $(BUILD)/spec/%.o $(BUILD)/cli/%.o: CFLAGS += $(CFLAGS_FUSE) \
	-DG_LOG_DOMAIN=\"chainfs\"
# the FUSE-over-io_uring transport (transport.c) is built on Debian's liburing
CFLAGS_URING = $(shell pkg-config --cflags liburing)
LIBS_URING = $(shell pkg-config --libs liburing)
$(BUILD)/fusefs/transport.o: CFLAGS += $(CFLAGS_URING)

BINS += $(BUILD)/chainfs
TEST_BINS += $(BUILD)/cfs-probe
$(BUILD)/chainfs: $(CFS_DAEMON_OBJS) $(CFS_LIB) $(PC_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE) $(LIBS_URING) -lpthread
$(BUILD)/cfs-probe: $(BUILD)/tests/probe.o
	$(CC) $(LDFLAGS) -o $@ $^
TEST_BINS += $(BUILD)/cfs-mount-diff $(BUILD)/cfs-fsops
$(BUILD)/cfs-fsops: $(BUILD)/tests/fsops.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/cfs-mount-diff: $(BUILD)/tests/mount_diff.o
	$(CC) $(LDFLAGS) -o $@ $^

UNIT_TESTS += $(BUILD)/test_links $(BUILD)/test_latency
UNIT_TESTS += $(BUILD)/test_record
$(BUILD)/test_record: $(BUILD)/tests/test_record.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/record_log.o $(BUILD)/fusefs/errname.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE) -lpthread
$(BUILD)/tests/test_record.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
UNIT_TESTS += $(BUILD)/test_fault
$(BUILD)/test_fault: $(BUILD)/tests/test_fault.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/fault.o $(BUILD)/fusefs/fault_parse.o $(BUILD)/fusefs/fault_json.o \
		$(BUILD)/fusefs/optable.o $(BUILD)/fusefs/errname.o \
		$(BUILD)/fusefs/json.o $(BUILD)/fusefs/change.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_fault.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
$(BUILD)/test_latency: $(BUILD)/tests/test_latency.o $(BUILD)/tests/check_main.o \
		$(BUILD)/fusefs/latency.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_latency.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
$(BUILD)/test_links: $(BUILD)/tests/test_links.o $(BUILD)/tests/check_main.o \
	$(BUILD)/fusefs/links.o $(BUILD)/fusefs/coherence.o $(BUILD)/fusefs/follow.o \
	$(BUILD)/fusefs/paths.o $(BUILD)/fusefs/notify.o $(BUILD)/fusefs/latency.o $(CFS_LIB) \
	$(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(BUILD)/tests/test_links.o: CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)

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
SHELL_TESTS += tests/mount_walks.sh
SHELL_TESTS += tests/mount_spin_quota.sh
SHELL_TESTS += tests/cli.sh
SHELL_TESTS += tests/sweep.sh
SHELL_TESTS += tests/mount_sparse.sh
SHELL_TESTS += tests/demo_output.sh
SHELL_TESTS += tests/mount_broken.sh
SHELL_TESTS += tests/mount_server_links.sh
SHELL_TESTS += tests/mount_loops.sh
SHELL_TESTS += tests/mount_meta.sh
SHELL_TESTS += tests/mount_nodes.sh
SHELL_TESTS += tests/mount_types.sh
SHELL_TESTS += tests/mount_tmpfs_ops.sh
SHELL_TESTS += tests/mount_xattr.sh
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
SHELL_TESTS += tests/man_options.sh
SHELL_TESTS += tests/materialize_bytes.sh
SHELL_TESTS += tests/mount_selfpath.sh
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
