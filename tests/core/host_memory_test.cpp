// What this machine's memory can give.
#include <gtest/gtest.h>

#include "core/host_memory.h"

namespace kernelarc {
namespace {

TEST(HostMemory, ReadsThisMachinesAvailableMemory) {
  const auto available = available_host_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, int64_t{64} << 20);
  // What the machine can give now is part of what it has.
  const auto physical = physical_memory_bytes();
  ASSERT_TRUE(physical.has_value());
  EXPECT_LE(*available, *physical);
}

}  // namespace
}  // namespace kernelarc
