#include <gtest/gtest.h>

#include "eval/occupancy.h"

namespace kernelarc {
namespace {

TEST(Occupancy, FullWhenNothingLimits) {
  // 256 threads, 32 registers, no shared memory: 8 blocks x 8 warps = 64 warps on sm_90.
  const auto occupancy = theoretical_occupancy("sm_90", {256, 32, 0});
  ASSERT_TRUE(occupancy);
  EXPECT_EQ(occupancy->blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(occupancy->fraction, 1.0);
}

TEST(Occupancy, RegistersLimit) {
  // 168 registers (a cuBLAS GEMM seen on the H200), 384 threads: 168*32 = 5376 per warp,
  // 65536 / 5376 = 12 warps = 1 block of 12 warps -> 12/64.
  const auto occupancy = theoretical_occupancy("sm_90a", {384, 168, 0});
  ASSERT_TRUE(occupancy);
  EXPECT_EQ(occupancy->blocks_per_sm, 1);
  EXPECT_EQ(occupancy->limited_by, "registers");
  EXPECT_DOUBLE_EQ(occupancy->fraction, 12.0 / 64.0);
}

TEST(Occupancy, SharedMemoryLimit) {
  // 100 KiB per block (+1 KiB reserved): two blocks fit in 228 KiB.
  const auto occupancy = theoretical_occupancy("sm_90", {128, 32, 100 * 1024});
  ASSERT_TRUE(occupancy);
  EXPECT_EQ(occupancy->blocks_per_sm, 2);
  EXPECT_EQ(occupancy->limited_by, "shared memory");
}

TEST(Occupancy, EveryResourceThatBindsAlikeIsNamed) {
  // A FlashAttention-3-style kernel measured on the H100: 384 threads at 168 registers allow one
  // block, and so do its 225.1 KiB of shared-memory tiles.
  const auto occupancy = theoretical_occupancy("sm_90a", {384, 168, 230504});
  ASSERT_TRUE(occupancy);
  EXPECT_EQ(occupancy->blocks_per_sm, 1);
  EXPECT_EQ(occupancy->limited_by, "registers and shared memory");
  // At 64 registers two blocks would fit: shared memory alone allows one.
  EXPECT_EQ(theoretical_occupancy("sm_90a", {384, 64, 230504})->limited_by, "shared memory");
}

TEST(Occupancy, BlockCountLimit) {
  // 32-thread blocks: 32 blocks per SM at most, 32 of 64 warps.
  const auto occupancy = theoretical_occupancy("sm_90", {32, 16, 0});
  ASSERT_TRUE(occupancy);
  EXPECT_EQ(occupancy->blocks_per_sm, 32);
  EXPECT_EQ(occupancy->limited_by, "blocks");
  EXPECT_DOUBLE_EQ(occupancy->fraction, 0.5);
}

TEST(Occupancy, UnknownArchitectureOrEmptyLaunch) {
  EXPECT_FALSE(theoretical_occupancy("sm_75", {256, 32, 0}));
  EXPECT_FALSE(theoretical_occupancy("sm_90", {0, 32, 0}));
}

}  // namespace
}  // namespace kernelarc
