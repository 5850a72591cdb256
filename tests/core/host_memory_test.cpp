// What this machine's memory can give.
#include <gtest/gtest.h>

#include "core/host_memory.h"

namespace kernelarc {
namespace {

TEST(HostMemory, ReadsThisMachinesAvailableMemory) {
  const auto available = available_host_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, int64_t{64} << 20);
}

}  // namespace
}  // namespace kernelarc
