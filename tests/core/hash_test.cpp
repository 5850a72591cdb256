#include "core/hash.h"
#include "core/paths.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace kernelarc {
namespace {

TEST(Hash, ContentHashIsXxh3Of128Bits) {
  // Known XXH3-128 value of the empty input (xxhsum -H2 /dev/null).
  EXPECT_EQ(content_hash(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(content_hash("kernelarc").size(), 32u);
  EXPECT_EQ(content_hash("kernelarc"), content_hash("kernelarc"));
  EXPECT_NE(content_hash("kernelarc"), content_hash("kernelArc"));
}

TEST(Hash, FieldsAreLengthPrefixed) {
  ContentHasher first;
  first.add("ab").add("c");
  ContentHasher second;
  second.add("a").add("bc");
  EXPECT_NE(first.hex(), second.hex());
  ContentHasher again;
  again.add("ab").add("c");
  EXPECT_EQ(first.hex(), again.hex());
  EXPECT_EQ(first.hex().size(), 32u);
}

TEST(Paths, DataDirFollowsTheEnvironmentThenTheSourceTree) {
  ::setenv("KERNELARC_DATA_DIR", "/opt/somewhere", 1);
  EXPECT_EQ(data_dir(), std::filesystem::path("/opt/somewhere"));
  EXPECT_EQ(abi_include_dir(), std::filesystem::path("/opt/somewhere/include"));
  ::unsetenv("KERNELARC_DATA_DIR");
  EXPECT_TRUE(std::filesystem::exists(abi_include_dir() / "kernelarc" / "abi.h"));
  EXPECT_TRUE(std::filesystem::exists(self_executable()));
  EXPECT_EQ(self_executable().filename(), "test_core");
}

}  // namespace
}  // namespace kernelarc
