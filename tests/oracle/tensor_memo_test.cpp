#include <gtest/gtest.h>

#include "core/host_memory.h"
#include "oracle/tensor_memo.h"

namespace kernelarc {
namespace {

TensorMap of_bytes(int64_t bytes) {
  TensorMap map;
  map.emplace("x", HostTensor(DType::UInt8, {bytes}));
  return map;
}

TEST(TensorMemo, TheDefaultBoundIsAQuarterOfThisMachinesMemoryUpTo16GiB) {
  const auto physical = physical_memory_bytes();
  ASSERT_TRUE(physical.has_value());
  EXPECT_EQ(TensorMemo::default_max_bytes(),
            std::min(std::size_t{16} << 30, static_cast<std::size_t>(*physical) / 4));
}

TEST(TensorMemo, KeepsWhatFitsAndDropsTheLeastRecentlyUsed) {
  TensorMemo memo(100);
  memo.put("a", of_bytes(40));
  memo.put("b", of_bytes(40));
  ASSERT_NE(memo.find("a"), nullptr);  // now "b" is the least recently used
  memo.put("c", of_bytes(40));
  EXPECT_EQ(memo.find("b"), nullptr);
  EXPECT_NE(memo.find("a"), nullptr);
  EXPECT_NE(memo.find("c"), nullptr);
  EXPECT_EQ(memo.bytes(), 80u);
}

TEST(TensorMemo, AMapLargerThanTheBoundIsReturnedButNotKept) {
  TensorMemo memo(100);
  memo.put("a", of_bytes(40));
  const auto big = memo.put("big", of_bytes(150));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->at("x").nbytes(), 150u);
  EXPECT_EQ(memo.find("big"), nullptr);
  EXPECT_NE(memo.find("a"), nullptr);  // not evicted for a map that was never going to fit
}

TEST(TensorMemo, ReplacingAKeyCountsItsBytesOnce) {
  TensorMemo memo(100);
  memo.put("a", of_bytes(60));
  memo.put("a", of_bytes(30));
  EXPECT_EQ(memo.bytes(), 30u);
  memo.erase("a");
  EXPECT_EQ(memo.bytes(), 0u);
  EXPECT_EQ(memo.find("a"), nullptr);
}

TEST(TensorMemo, HandedOutMapsOutliveTheirEviction) {
  TensorMemo memo(50);
  const auto first = memo.put("a", of_bytes(40));
  memo.put("b", of_bytes(40));
  EXPECT_EQ(memo.find("a"), nullptr);
  EXPECT_EQ(first->at("x").nbytes(), 40u);
}

}  // namespace
}  // namespace kernelarc
