// The C++ input generator used with native references: a deterministic PRNG, SOL-ExecBench's
// distributions per dtype and its name heuristics.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "oracle/input_generator.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

TEST(Rng, SameSeedSameStreamOtherSeedOtherStream) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    uint64_t value = a.next();
    EXPECT_EQ(value, b.next());
    EXPECT_NE(value, c.next());
  }
}

TEST(Rng, NormalHasUnitMoments) {
  Rng rng(7);
  constexpr int kCount = 20000;
  double sum = 0, squares = 0;
  for (int i = 0; i < kCount; ++i) {
    double value = rng.normal();
    sum += value;
    squares += value * value;
  }
  double mean = sum / kCount;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(squares / kCount - mean * mean, 1.0, 0.05);
}

TEST(RandomTensor, IntegerAndLowPrecisionRanges) {
  Rng rng(1);
  struct Range {
    DType dtype;
    double low, high;
  };
  for (Range range : {Range{DType::Int8, -128, 127}, Range{DType::UInt8, 0, 255},
                      Range{DType::Int32, -1024, 1023}, Range{DType::Int64, -1024, 1023},
                      Range{DType::Bool, 0, 1}, Range{DType::Float8E4M3FN, -2, 2}}) {
    HostTensor tensor = random_tensor(range.dtype, {4096}, InputPattern::Random, rng);
    double low = INFINITY, high = -INFINITY;
    for (double value : values(tensor)) {
      low = std::min(low, value);
      high = std::max(high, value);
    }
    EXPECT_GE(low, range.low) << dtype_name(range.dtype);
    EXPECT_LE(high, range.high) << dtype_name(range.dtype);
    EXPECT_LT(low, high) << dtype_name(range.dtype);  // not constant
  }
}

// SOL-ExecBench draws float4 as randn quantised to E2M1, two values a byte: the codes follow
// the normal's mass (about 20% round to +-0, 1 in 2 million reach 6), both nibbles drawn.
TEST(RandomTensor, Float4IsQuantisedRandnPackedTwoPerByte) {
  Rng rng(3);
  const HostTensor tensor =
      random_tensor(DType::Float4E2M1FNx2, {64, 64}, InputPattern::Random, rng);
  EXPECT_EQ(tensor.bytes.size(), 64u * 64u);
  int counts[2][16] = {};
  for (const std::byte byte : tensor.bytes) {
    const auto bits = static_cast<uint8_t>(byte);
    ++counts[0][bits & 15];
    ++counts[1][bits >> 4];
  }
  for (const auto& nibble : counts) {
    const double n = 64 * 64;
    const double zero = (nibble[0] + nibble[8]) / n;  // |x| <= 0.25: 0.197
    const double one = (nibble[2] + nibble[10]) / n;  // 0.75 <= |x| <= 1.25: 0.242
    const double six = (nibble[7] + nibble[15]) / n;  // |x| > 5
    EXPECT_NEAR(zero, 0.197, 0.03);
    EXPECT_NEAR(one, 0.242, 0.03);
    EXPECT_EQ(six, 0.0);
    EXPECT_NEAR((nibble[0] + nibble[1] + nibble[2] + nibble[3] + nibble[4] + nibble[5]) / n, 0.5,
                0.03);  // signs balanced
  }
  EXPECT_EQ(classify_input("k_cache", {64, 64}, "", DType::Float4E2M1FNx2), InputPattern::Random);
  EXPECT_EQ(classify_input("rms_norm_weight", {64}, "", DType::Float4E2M1), InputPattern::Random);
}

TEST(ClassifyInput, FollowsSolExecBenchNames) {
  auto classify = [](std::string_view name, std::vector<int64_t> shape = {8, 8},
                     std::string_view description = "", DType dtype = DType::Float32) {
    return classify_input(name, shape, description, dtype);
  };
  EXPECT_EQ(classify("rms_norm_weight"), InputPattern::Ones);
  EXPECT_EQ(classify("norm_weight"), InputPattern::Ones);
  EXPECT_EQ(classify("post_attention_layernorm2_weight"), InputPattern::Ones);
  EXPECT_EQ(classify("ln_f_norm_bias"), InputPattern::Zeros);
  EXPECT_EQ(classify("attention_mask"), InputPattern::CausalMask);
  EXPECT_EQ(classify("attention_mask", {4, 8}), InputPattern::BinaryMask);  // not square
  EXPECT_EQ(classify("pad_mask", {8}, "Binary mask of valid tokens"), InputPattern::BinaryMask);
  EXPECT_EQ(classify("mask", {8, 8}, "causal attention mask"), InputPattern::CausalMask);
  EXPECT_EQ(classify("cos_cached"), InputPattern::Cos);
  EXPECT_EQ(classify("rope_sin"), InputPattern::Sin);
  EXPECT_EQ(classify("rstd"), InputPattern::Positive);
  EXPECT_EQ(classify("x_var"), InputPattern::Positive);
  EXPECT_EQ(classify("std2"), InputPattern::Positive);
  EXPECT_EQ(classify("A_log"), InputPattern::SsmALog);
  EXPECT_EQ(classify("A_cumsum"), InputPattern::SsmACumsum);
  EXPECT_EQ(classify("routing_weights"), InputPattern::Softmax);
  EXPECT_EQ(classify("scores", {8, 8}, "Softmax output of the router"), InputPattern::Softmax);
  EXPECT_EQ(classify("q_proj"), InputPattern::ScaledWeight);
  EXPECT_EQ(classify("weight"), InputPattern::ScaledWeight);
  EXPECT_EQ(classify("weight1"), InputPattern::ScaledWeight);
  EXPECT_EQ(classify("weight", {8}), InputPattern::Random);  // a vector is no weight matrix
  EXPECT_EQ(classify("hidden_states"), InputPattern::Random);
  EXPECT_EQ(classify("rms_norm_weight", {8}, "", DType::Int32), InputPattern::Random);
  EXPECT_EQ(classify("rms_norm_weight", {8}, "", DType::Float8E4M3FN), InputPattern::Random);
}

TEST(RandomTensor, PatternsHaveTheirShape) {
  Rng rng(3);
  HostTensor mask = random_tensor(DType::BFloat16, {2, 4, 4}, InputPattern::CausalMask, rng);
  for (int64_t i = 0; i < mask.numel(); ++i) {
    bool above = i % 4 > (i / 4) % 4;
    EXPECT_EQ(mask.at(i), above ? -3.3895313892515355e38 : 0.0) << i;
  }
  HostTensor softmax = random_tensor(DType::Float32, {3, 5}, InputPattern::Softmax, rng);
  for (int row = 0; row < 3; ++row) {
    double sum = 0;
    for (int column = 0; column < 5; ++column) sum += softmax.at(row * 5 + column);
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  HostTensor cumsum = random_tensor(DType::Float32, {2, 6}, InputPattern::SsmACumsum, rng);
  for (int64_t i = 1; i < cumsum.numel(); ++i) {
    if (i % 6 != 0) EXPECT_LE(cumsum.at(i), cumsum.at(i - 1));
  }
  HostTensor weight = random_tensor(DType::Float32, {64, 256}, InputPattern::ScaledWeight, rng);
  double squares = 0;
  for (double value : values(weight)) squares += value * value;
  EXPECT_NEAR(std::sqrt(squares / static_cast<double>(weight.numel())), 1.0 / 16, 0.005);
  for (double value : values(random_tensor(DType::Float16, {100}, InputPattern::Positive, rng))) {
    EXPECT_GE(value, 0.0999);
  }
}

TEST(GenerateInputs, ScalarsBlobsAndCustomInputs) {
  Problem scale = fixture_problem("native_scale");
  const Workload& small = workload_named(scale, "small");
  TensorMap inputs = generate_inputs(scale, small, 5);
  EXPECT_EQ(inputs.at("x").shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values(inputs.at("rms_norm_weight")), std::vector<double>(4, 1.0));
  EXPECT_EQ(values(inputs.at("alpha")), std::vector<double>{0.5});
  EXPECT_EQ(generate_inputs(scale, small, 5).at("x").bytes, inputs.at("x").bytes);
  EXPECT_NE(generate_inputs(scale, small, 6).at("x").bytes, inputs.at("x").bytes);

  Problem custom = fixture_problem("py_custom");
  EXPECT_EQ(values(generate_inputs(custom, workload_named(custom, "blob"), 1).at("idx")),
            (std::vector<double>{3, 1, 2, 0}));
  std::string missing =
      input_error_of([&] { generate_inputs(custom, workload_named(custom, "missing-blob"), 1); });
  EXPECT_NE(missing.find("absent.safetensors"), std::string::npos) << missing;
  std::string needs_python =
      input_error_of([&] { generate_inputs(custom, workload_named(custom, "custom"), 1); });
  EXPECT_NE(needs_python.find("get_inputs"), std::string::npos) << needs_python;
}

}  // namespace
}  // namespace kernelarc
