// The warning before a search whose workloads may not fit this machine's memory.
#include <gtest/gtest.h>

#include "app/memory_check.h"

namespace kernelarc {
namespace {

/// x [N, M] float32 in, y [N] float32 out.
Definition row_sum() {
  return parse_definition({{"name", "row_sum"},
                           {"axes", {{"N", {{"type", "var"}}}, {"M", {{"type", "var"}}}}},
                           {"inputs", {{"x", {{"shape", {"N", "M"}}, {"dtype", "float32"}}}}},
                           {"outputs", {{"y", {{"shape", {"N"}}, {"dtype", "float32"}}}}},
                           {"reference", "def run(x):\n    return x.sum(-1)\n"}},
                          "row_sum");
}

Workload workload(const std::string& uuid, int64_t n, int64_t m) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"N", n}, {"M", m}};
  return w;
}

TEST(MemoryCheck, NamesTheLargestWorkloadWhenItTakesOverAThirdOfWhatIsAvailable) {
  // 32768 x 32768 floats in, 32768 out: 4.295 GB (printed to 3 digits); the small one 4 MB.
  const std::vector<Workload> workloads = {workload("small", 1024, 1024),
                                           workload("large", 32768, 32768)};
  const auto warning = memory_warning(row_sum(), workloads, int64_t{6} << 30);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("workload large holds 4.3 GB of inputs and outputs"), std::string::npos)
      << *warning;
  EXPECT_NE(warning->find("this machine has 6.44 GB available"), std::string::npos) << *warning;

  // Four times the bytes available: no warning; nor when the machine's memory is unknown.
  EXPECT_FALSE(memory_warning(row_sum(), workloads, int64_t{16} << 30));
  EXPECT_FALSE(memory_warning(row_sum(), workloads, std::nullopt));
  EXPECT_FALSE(memory_warning(row_sum(), {workload("small", 1024, 1024)}, int64_t{6} << 30));
}

}  // namespace
}  // namespace kernelarc
