# resolver/: pure C, no FUSE, no GLib.
RESOLVER_LIB := $(BUILD)/libresolver.a
$(RESOLVER_LIB): $(BUILD)/resolver/resolver.o
	$(AR) rcs $@ $^
