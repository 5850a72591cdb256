#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "eval/compare.h"
#include "eval/stats.h"

namespace kernelarc {
namespace {

HostTensor make(std::vector<double> values, DType dtype = DType::Float32) {
  HostTensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) tensor.set(static_cast<int64_t>(i), values[i]);
  return tensor;
}

TEST(Compare, AtolPlusRtolTimesReference) {
  Tolerance tolerance{.max_atol = 0.1, .max_rtol = 0.1, .required_matched_ratio = 1.0};
  // |d| <= 0.1 + 0.1 * 10 = 1.1: 1.05 passes, 1.2 fails.
  EXPECT_TRUE(compare_output(make({11.05}), make({10.0}), tolerance).passed);
  const auto failed = compare_output(make({11.2}), make({10.0}), tolerance);
  EXPECT_FALSE(failed.passed);
  EXPECT_NEAR(failed.max_absolute_error, 1.2, 1e-5);
  EXPECT_NEAR(failed.max_relative_error, 0.12, 1e-5);
}

// A failure says where: the first failing element and the one with the largest error, with
// what was computed and what the reference has, also across the parts large outputs split into.
TEST(Compare, AFailureNamesTheFirstFailingAndTheWorstElement) {
  Tolerance tolerance{.max_atol = 0.01, .max_rtol = 0, .required_matched_ratio = 1.0};
  const auto small = compare_output(make({1, 1.5, 1, 4}), make({1, 1, 1, 1}), tolerance);
  EXPECT_FALSE(small.passed);
  EXPECT_NE(small.reason.find("first failing element 1: got 1.5, expected 1"), std::string::npos)
      << small.reason;
  EXPECT_NE(small.reason.find("largest error at element 3: got 4, expected 1"), std::string::npos)
      << small.reason;

  const int64_t n = int64_t{3} << 20;  // split over threads
  std::vector<double> out(static_cast<std::size_t>(n), 2.0), ref = out;
  out[(n / 3) + 5] = 3.0;
  out[n - 2] = 9.0;
  const auto large = compare_output(make(out), make(ref), tolerance);
  EXPECT_NE(large.reason.find(fmt::format("first failing element {}: got 3", n / 3 + 5)),
            std::string::npos)
      << large.reason;
  EXPECT_NE(large.reason.find(fmt::format("largest error at element {}: got 9", n - 2)),
            std::string::npos)
      << large.reason;
  EXPECT_TRUE(compare_output(make(ref), make(ref), tolerance).reason.empty());
}

TEST(Compare, MatchedRatioDecides) {
  Tolerance tolerance{.max_atol = 0.01, .max_rtol = 0, .required_matched_ratio = 0.75};
  const auto result = compare_output(make({1, 1, 1, 1.05}), make({1, 1, 1, 1}), tolerance);
  EXPECT_TRUE(result.passed) << result.reason;
  EXPECT_DOUBLE_EQ(result.matched_ratio, 0.75);
  tolerance.required_matched_ratio = 0.8;
  EXPECT_FALSE(compare_output(make({1, 1, 1, 1.05}), make({1, 1, 1, 1}), tolerance).passed);
}

// 1e30 in 1% of the elements passes a 99% matched ratio; the implicit cap refuses it.
TEST(Compare, ImplicitErrorCapRefusesAHugeErrorInFewElements) {
  Tolerance tolerance{.max_atol = 0.01, .max_rtol = 0.01, .required_matched_ratio = 0.99};
  std::vector<double> reference(200, 2.0), output(200, 2.0);
  output[17] = 1e30;
  auto result = compare_output(make(output), make(reference), tolerance);
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.reason.find("error cap"), std::string::npos) << result.reason;
  output[17] = 2.0;
  output[120] = 2.25;  // off by 0.25: beyond the tolerance, within the cap
  result = compare_output(make(output), make(reference), tolerance);
  EXPECT_TRUE(result.passed) << result.reason;
  // Integer outputs (indices) have no scale for a cap: the matched ratio alone decides.
  std::vector<double> indices(200, 3.0), wrong = indices;
  wrong[5] = 4000;
  EXPECT_TRUE(compare_output(make(wrong, DType::Int32), make(indices, DType::Int32),
                             Tolerance{.max_atol = 0, .max_rtol = 0})
                  .passed);
}

TEST(Compare, ErrorCapFailsEvenWhenRatioHolds) {
  Tolerance tolerance{
      .max_atol = 0.01, .max_rtol = 0, .required_matched_ratio = 0.5, .max_error_cap = 2.0};
  EXPECT_FALSE(compare_output(make({1, 4}), make({1, 1}), tolerance).passed);
  EXPECT_TRUE(compare_output(make({1, 2}), make({1, 1}), tolerance).passed);
}

TEST(Compare, NanAndInfFailEvenWhenTheyMatch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Tolerance tolerance{.required_matched_ratio = 0.5};
  const auto with_nan = compare_output(make({1, nan}), make({1, nan}), tolerance);
  EXPECT_FALSE(with_nan.passed);
  EXPECT_TRUE(with_nan.has_nan);
  EXPECT_FALSE(compare_output(make({1, inf}), make({1, inf}), tolerance).passed);
  EXPECT_FALSE(compare_output(make({1, -inf}), make({1, -inf}), tolerance).passed);
  tolerance.allow_negative_inf = true;
  EXPECT_TRUE(compare_output(make({1, -inf}), make({1, -inf}), tolerance).passed);
  EXPECT_FALSE(compare_output(make({1, inf}), make({1, inf}), tolerance).passed);
}

TEST(Compare, AllZeroOutputFailsUnlessReferenceIsZero) {
  Tolerance tolerance{.max_atol = 1.0, .max_rtol = 0, .required_matched_ratio = 0.5};
  EXPECT_FALSE(compare_output(make({0, 0}), make({0.5, 0.5}), tolerance).passed);
  EXPECT_TRUE(compare_output(make({0, 0}), make({0, 0}), tolerance).passed);
}

TEST(Compare, ElementCountMismatchFailsUnread) {
  Tolerance tolerance{.max_atol = 1.0, .max_rtol = 0, .required_matched_ratio = 0.5};
  const auto result = compare_output(make({1, 1, 1}), make({1, 1}), tolerance);
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.reason, "3 elements, but the reference has 2");
}

TEST(Compare, ReadsAViewInPlace) {
  // The guard compares outputs where the worker left them: a view over raw bytes.
  const HostTensor reference = make({1, 2, 3, 4});
  std::vector<std::byte> arena(64);
  std::copy(reference.bytes.begin(), reference.bytes.end(), arena.begin() + 16);
  Tolerance tolerance{.max_atol = 1e-6, .max_rtol = 0, .required_matched_ratio = 1.0};
  const TensorView in_arena(DType::Float32, std::span(arena).subspan(16, reference.nbytes()));
  EXPECT_TRUE(compare_output(in_arena, reference, tolerance).passed);
  arena[16 + 4 * 3 + 1] = std::byte{0x10};  // the last element, 4.0f, becomes 4.002f
  EXPECT_FALSE(compare_output(in_arena, reference, tolerance).passed);
}

TEST(Compare, LargeOutputsSplitOverThreadsCountEveryElement) {
  // Past 2^20 elements the comparison runs in parts: the counts and maxima must still cover
  // every element, wherever the errors fall (first, part boundaries, last).
  const int64_t n = (int64_t{1} << 22) + 3;
  HostTensor output(DType::BFloat16, {n}), reference(DType::BFloat16, {n});
  for (int64_t i = 0; i < n; ++i) {
    output.set(i, 1.0);
    reference.set(i, 1.0);
  }
  const std::vector<int64_t> wrong = {0, n / 4, n / 2 + 1, n - 1};
  for (const int64_t i : wrong) output.set(i, 3.0);
  output.set(n / 3, 1.5);
  Tolerance tolerance{.max_atol = 0.01, .max_rtol = 0, .required_matched_ratio = 1.0};
  const auto result = compare_output(output, reference, tolerance);
  EXPECT_FALSE(result.passed);
  EXPECT_DOUBLE_EQ(result.matched_ratio, 1.0 - 5.0 / static_cast<double>(n));
  EXPECT_DOUBLE_EQ(result.max_absolute_error, 2.0);
  EXPECT_NE(result.reason.find("5 of 4194307 elements"), std::string::npos) << result.reason;
  output.set(n - 2, std::numeric_limits<double>::quiet_NaN());
  const auto with_nan = compare_output(output, reference, tolerance);
  EXPECT_TRUE(with_nan.has_nan);
  EXPECT_NE(with_nan.reason.find("1 of 4194307 elements are NaN"), std::string::npos);
}

TEST(Compare, PoisonIsNanForFloatsAndCountable) {
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64,
                      DType::Float8E4M3FN, DType::Float8E5M2}) {
    const auto poison = poison_pattern(dtype, 0);
    ASSERT_EQ(poison.size(), dtype_size(dtype));
    EXPECT_TRUE(std::isnan(load_element(dtype, poison.data()))) << dtype_name(dtype);
  }
  EXPECT_NE(poison_pattern(DType::Int32, 0), poison_pattern(DType::Int32, 1));
  auto tensor = make({1, 2, 3});
  const auto poison = poison_pattern(DType::Float32, 0);
  std::copy(poison.begin(), poison.end(), reinterpret_cast<uint8_t*>(tensor.bytes.data()) + 4);
  EXPECT_EQ(count_poisoned(tensor, poison), 1);
}

// A float4 byte holds two values, and the tolerance applies to values: comparing such outputs
// fails with the reason (the guard refuses the problem before running), never reads a value.
TEST(Compare, Float4OutputsAreRefusedNotRead) {
  HostTensor output(DType::Float4E2M1FNx2, {4});
  const HostTensor reference = output;
  const auto result = compare_output(output, reference, Tolerance{});
  EXPECT_FALSE(result.passed);
  EXPECT_EQ(result.reason,
            "float4_e2m1fn_x2 outputs cannot be compared: a byte holds two values, and "
            "SOL-ExecBench's tolerance applies to values");
  EXPECT_FALSE(
      compare_output(make({1, 2, 3, 4}), HostTensor(DType::Float4E2M1, {4}), Tolerance{}).passed);
  // Unwritten float4 outputs are still countable: the poison is one byte, alternating.
  EXPECT_EQ(poison_pattern(DType::Float4E2M1FNx2, 0), std::vector<uint8_t>{0xA5});
  EXPECT_EQ(poison_pattern(DType::Float4E2M1FNx2, 1), std::vector<uint8_t>{0x5A});
}

TEST(Stats, MedianIntervalAndPercentiles) {
  std::vector<double> samples;
  for (int i = 1; i <= 101; ++i) samples.push_back(i);
  const auto summary = summarize(samples);
  EXPECT_EQ(summary.samples, 101);
  EXPECT_DOUBLE_EQ(summary.median, 51);
  EXPECT_DOUBLE_EQ(summary.p10, 11);
  EXPECT_DOUBLE_EQ(summary.p90, 91);
  EXPECT_LT(summary.ci_low, 51);
  EXPECT_GT(summary.ci_high, 51);
  EXPECT_GE(summary.ci_low, 40);  // about 51 - 0.98*sqrt(101) ranks
  EXPECT_LE(summary.ci_high, 62);
  EXPECT_EQ(summarize({}).samples, 0);
}

}  // namespace
}  // namespace kernelarc
