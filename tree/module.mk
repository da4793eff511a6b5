# tree/: the daemon's in-memory tree (tree.h; tree_int.h says which file holds what) and the
# in-root walk (inroot.h). With spec/ it makes libchainfs.a, which the daemon, the tests, the
# fuzz targets and the benches link; tests/fuzz builds the same lists.
CFS_TREE_SRCS := $(addprefix tree/,tree.c tree_attr.c tree_entry.c tree_store.c tree_index.c tree_data.c \
	tree_rename.c tree_undo.c tree_acl.c tree_xattr.c inroot.c)
CFS_LIB := $(BUILD)/libchainfs.a
CFS_CORE_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(CFS_TREE_SRCS))
$(CFS_LIB): $(CFS_CORE_OBJS)
	$(AR) rcs $@ $(CFS_CORE_OBJS)

UNIT_TESTS += $(BUILD)/test_tree
# the tree's suite: one binary, its files along the module's seams (tests/tree/test_tree.h)
TEST_TREE_OBJS := $(addprefix $(BUILD)/tests/tree/,test_tree.o test_tree_fixture.o \
	test_tree_entry.o test_tree_rename.o test_tree_data.o test_tree_holes.o test_tree_attr.o test_tree_alloc.o \
	test_tree_undo.o test_tree_xattr.o)
$(BUILD)/test_tree: $(TEST_TREE_OBJS) $(BUILD)/tests/check_main.o $(CFS_LIB) $(RESOLVER_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_CHECK) $(LIBS_FUSE)
$(TEST_TREE_OBJS): CFLAGS += $(CFLAGS_CHECK) $(CFLAGS_FUSE)
