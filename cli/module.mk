# cli/: the client programs: chainfsctl (control socket commands, replay) and chainfs-sweep.
# They link the few daemon files they share (fusefs/: the socket's path, errno names, the
# follow modes' table).
BINS += $(BUILD)/chainfsctl $(BUILD)/chainfs-sweep
$(BUILD)/chainfs-sweep: $(BUILD)/cli/sweep.o $(BUILD)/fusefs/ctlpath.o $(BUILD)/fusefs/errname.o \
	$(BUILD)/fusefs/follow.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE)
$(BUILD)/chainfsctl: $(BUILD)/cli/chainfsctl.o $(BUILD)/cli/chainfsctl_mount.o $(BUILD)/fusefs/ctlpath.o \
	$(BUILD)/cli/replay.o $(BUILD)/cli/replay_line.o $(BUILD)/cli/replay_at.o \
	$(BUILD)/cli/replay_seen.o \
	$(BUILD)/fusefs/errname.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_FUSE)
