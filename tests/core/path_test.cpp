#include <gtest/gtest.h>
#include "packfs/path.hpp"
TEST(Path, Placeholder) { EXPECT_EQ(*packfs::normalize_path("/a//b/./c/.."), "/a/b"); }
