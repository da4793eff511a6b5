# spec/: the spec language (spec.h; spec_int.h says which file holds what): load, lines at
# runtime, dump, materialize, spec-from. Its objects join the tree's in libchainfs.a.
CFS_SPEC_SRCS := $(addprefix spec/,spec.c spec_lex.c spec_make.c spec_gen.c spec_dump.c \
	spec_materialize.c spec_from.c)
CFS_SPEC_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(CFS_SPEC_SRCS)) $(BUILD)/spec/default_spec.o
CFS_CORE_OBJS += $(CFS_SPEC_OBJS)
$(CFS_LIB): $(CFS_SPEC_OBJS)

UNIT_TESTS += $(BUILD)/test_spec
# test_spec fails the spec module's and the tree's own allocations one by one: --wrap
# redirects every object the link takes from $(CFS_LIB) (GLib's and libc's inner ones are not
# redirected)
CFS_SPEC_TEST_OBJS := $(addprefix $(BUILD)/tests/spec/,test_spec.o test_spec_util.o \
	test_spec_lex.o test_spec_make.o test_spec_gen.o test_spec_dump.o test_spec_materialize.o)
$(BUILD)/test_spec: $(CFS_SPEC_TEST_OBJS) $(BUILD)/tests/check_main.o $(CFS_LIB) \
		$(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc -o $@ $^ $(LIBS_CHECK) \
		$(LIBS_FUSE)
$(CFS_SPEC_TEST_OBJS): CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)

# spec/default.spec becomes a C array of 0xHH bytes (od + sed: coreutils, no xxd), so any
# byte survives, ended by a NUL (a string literal this long is beyond what ISO C promises).
$(BUILD)/spec/default_spec.c: spec/default.spec
	@mkdir -p $(dir $@)
	{ echo '/* generated from spec/default.spec: do not edit */'; \
	  echo '#include "spec.h"'; \
	  echo 'const char cfs_default_spec[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1, /g'; \
	  echo '0};'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/spec/default_spec.o: $(BUILD)/spec/default_spec.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
# test_spec compares the embedded text with the source file
$(BUILD)/tests/spec/test_spec_dump.o: CFLAGS += -DCFS_SRCDIR='"$(CURDIR)"'
