// The lowering on op graphs as the tracer writes them (tests/data/lower/<case>/graph.json, next
// to the definition they were traced from): the plan's structure, and its semantics through
// the reference interpreter against values computed directly here.
#include <cmath>

#include <gtest/gtest.h>

#include "lower_case.h"

namespace kernelarc {
namespace {

using namespace lower_test;

/// 1 / sqrt(mean(x[row]^2) + 1e-6) over a row of `hidden` values.
double inverse_rms(const std::vector<double>& x, int64_t row, int64_t hidden) {
  double squares = 0;
  for (int64_t h = 0; h < hidden; ++h) squares += std::pow(x[row * hidden + h], 2);
  return 1 / std::sqrt(squares / hidden + 1e-6);
}

TEST(LowerPlan, RmsnormBf16IsOneReduceKernelWithAFullStore) {
  const Case c = lower_case("rmsnorm_bf16");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const Json& plan = c.lowering.plan;
  ASSERT_EQ(kernel_kinds(plan), std::vector<std::string>{"reduce"});
  const Json& kernel = plan["kernels"][0];
  EXPECT_EQ(kernel["domain"], Json::array({"batch_size"}));
  EXPECT_EQ(kernel["reduce"], Json::array({"8"}));
  EXPECT_EQ(kernel["stages"].size(), 1u);
  ASSERT_EQ(kernel["stores"].size(), 1u);
  EXPECT_EQ(kernel["stores"][0]["over"], "full");
  EXPECT_EQ(temp_count(plan), 0);
  const int64_t rows = 3, hidden = 8;
  check_semantics(
      c, {{"batch_size", rows}},
      [&](const PlanBuffers& in) {
        std::vector<double> out;
        for (int64_t r = 0; r < rows; ++r) {
          const double scale = inverse_rms(in.at("x"), r, hidden);
          for (int64_t h = 0; h < hidden; ++h) {
            out.push_back(in.at("x")[r * hidden + h] * scale * in.at("weight")[h]);
          }
        }
        return PlanBuffers{{"output", out}};
      },
      1e-2);
}

TEST(LowerPlan, FusedAddRmsnormWritesBothOutputsFromOneKernel) {
  const Case c = lower_case("add_rmsnorm");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  const Json& stores = c.lowering.plan["kernels"][0]["stores"];
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(stores[0]["over"], "full");
  EXPECT_EQ(stores[1]["over"], "full");
  const int64_t rows = 2, hidden = 8;
  check_semantics(c, {{"batch_size", rows}}, [&](const PlanBuffers& in) {
    std::vector<double> out, residual;
    for (int64_t r = 0; r < rows; ++r) {
      double squares = 0;
      for (int64_t h = 0; h < hidden; ++h) {
        const double v = in.at("x")[r * hidden + h] + in.at("residual")[r * hidden + h];
        residual.push_back(v);
        squares += v * v;
      }
      const double scale = 1 / std::sqrt(squares / hidden + 1e-6);
      for (int64_t h = 0; h < hidden; ++h) {
        out.push_back(residual[r * hidden + h] * scale * in.at("weight")[h]);
      }
    }
    return PlanBuffers{{"output", out}, {"residual_out", residual}};
  });
}

std::vector<double> softmax_rows(const std::vector<double>& x, int64_t rows, int64_t cols,
                                 bool log) {
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, x[r * cols + j]);
    for (int64_t j = 0; j < cols; ++j) s += std::exp(x[r * cols + j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      out.push_back(log ? x[r * cols + j] - m - std::log(s) : std::exp(x[r * cols + j] - m) / s);
    }
  }
  return out;
}

TEST(LowerPlan, SoftmaxIsMaxStageSumStageAndFullStore) {
  for (const bool log : {false, true}) {
    const Case c = lower_case(log ? "log_softmax" : "softmax");
    ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
    ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
    const Json& kernel = c.lowering.plan["kernels"][0];
    ASSERT_EQ(kernel["stages"].size(), 2u);
    EXPECT_EQ(kernel["stages"][0]["op"], "max");
    EXPECT_EQ(kernel["stages"][1]["op"], "sum");
    EXPECT_EQ(kernel["stores"][0]["over"], "full");
    check_semantics(c, {{"batch_size", 3}}, [&](const PlanBuffers& in) {
      return PlanBuffers{{"output", softmax_rows(in.at("x"), 3, 8, log)}};
    });
  }
}

TEST(LowerPlan, LayernormOverTheLastThreeDims) {
  const Case c = lower_case("layernorm3");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  const Json& kernel = c.lowering.plan["kernels"][0];
  EXPECT_EQ(kernel["reduce"], Json::array({"3", "4", "5"}));
  EXPECT_EQ(kernel["stages"].size(), 2u);
  const int64_t rows = 2, n = 60;
  check_semantics(c, {{"batch_size", rows}}, [&](const PlanBuffers& in) {
    std::vector<double> out;
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < n; ++j) mean += in.at("x")[r * n + j] / n;
      for (int64_t j = 0; j < n; ++j) var += std::pow(in.at("x")[r * n + j] - mean, 2) / n;
      for (int64_t j = 0; j < n; ++j) {
        out.push_back((in.at("x")[r * n + j] - mean) / std::sqrt(var + 1e-5) * in.at("weight")[j] +
                      in.at("bias")[j]);
      }
    }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, SumOverAMiddleDimKeepsTheOuterDims) {
  const Case c = lower_case("sum_middle");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const Json& kernel = c.lowering.plan["kernels"][0];
  EXPECT_EQ(kernel["domain"], Json::array({"a", "5"}));
  EXPECT_EQ(kernel["reduce"], Json::array({"6"}));
  EXPECT_EQ(kernel["stores"][0]["over"], "keep");
  check_semantics(c, {{"a", 2}}, [&](const PlanBuffers& in) {
    std::vector<double> out(10, 0.0);
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t k = 0; k < 5; ++k) out[a * 5 + k] += in.at("x")[(a * 6 + b) * 5 + k];
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, ArgmaxWithKeepdim) {
  const Case c = lower_case("argmax");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_EQ(c.lowering.plan["kernels"][0]["stages"][0]["op"], "argmax");
  check_semantics(c, {{"batch_size", 4}}, [&](const PlanBuffers& in) {
    std::vector<double> out;
    for (int64_t r = 0; r < 4; ++r) {
      int64_t best = 0;
      for (int64_t j = 1; j < 7; ++j) {
        if (in.at("x")[r * 7 + j] > in.at("x")[r * 7 + best]) best = j;
      }
      out.push_back(static_cast<double>(best));
    }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, CumsumForwardReverseAndExclusive) {
  const Case c = lower_case("cumsum");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  for (const auto& kind : kernel_kinds(c.lowering.plan))
    EXPECT_TRUE(kind == "scan" || kind == "pointwise");
  check_semantics(c, {{"batch_size", 2}}, [&](const PlanBuffers& in) {
    std::vector<double> forward, reverse(12), exclusive;
    for (int64_t r = 0; r < 2; ++r) {
      double running = 0;
      for (int64_t j = 0; j < 6; ++j) {
        exclusive.push_back(running);
        running += in.at("x")[r * 6 + j];
        forward.push_back(running);
      }
      running = 0;
      for (int64_t j = 5; j >= 0; --j) {
        running += in.at("x")[r * 6 + j];
        reverse[static_cast<std::size_t>(r * 6 + j)] = running;
      }
    }
    return PlanBuffers{{"forward", forward}, {"reverse", reverse}, {"exclusive", exclusive}};
  });
}

TEST(LowerPlan, MseLossIsAFullReduction) {
  const Case c = lower_case("mse_loss");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  EXPECT_EQ(c.lowering.plan["kernels"][0]["domain"], Json::array());
  check_semantics(c, {{"batch_size", 3}}, [&](const PlanBuffers& in) {
    double sum = 0;
    for (std::size_t i = 0; i < 15; ++i) sum += std::pow(in.at("x")[i] - in.at("y")[i], 2);
    return PlanBuffers{{"output", {sum / 15}}};
  });
}

TEST(LowerPlan, CrossEntropyThroughLogSoftmaxAndNllLoss) {
  const Case c = lower_case("cross_entropy");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"reduce", "reduce"}));
  EXPECT_EQ(temp_count(c.lowering.plan), 2);  // the row max and the row sum of exp
  check_semantics(
      c, {{"batch_size", 4}},
      [&](const PlanBuffers& in) {
        const auto logp = softmax_rows(in.at("logits"), 4, 6, true);
        double sum = 0;
        for (int64_t r = 0; r < 4; ++r)
          sum -= logp[r * 6 + static_cast<int64_t>(in.at("target")[r])];
        return PlanBuffers{{"output", {sum / 4}}};
      },
      1e-5, 6);
}

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b_t, int64_t m,
                           int64_t n, int64_t k, int64_t batch = 1) {
  std::vector<double> out;
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += a[(p * m + i) * k + q] * b_t[(p * n + j) * k + q];
        out.push_back(acc);
      }
  return out;
}

double gelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

TEST(LowerPlan, GemmWithBiasAndGeluEpilogueIsOneMatmulKernel) {
  const Case c = lower_case("gemm_gelu");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"matmul"});
  EXPECT_EQ(c.lowering.plan["kernels"][0]["b"]["buffer"], "weight");  // read transposed in place
  EXPECT_EQ(temp_count(c.lowering.plan), 0);
  check_semantics(c, {{"m", 3}}, [&](const PlanBuffers& in) {
    auto out = matmul(in.at("x"), in.at("weight"), 3, 6, 5);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = gelu(out[i] + in.at("bias")[i % 6]);
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, AComputedBf16OperandIsStoredInBf16AsEagerHandsItToTheProduct) {
  // The normalized rows times the norm weight are a bfloat16 tensor in eager, and F.linear reads
  // them so: a float32 temp would keep bits eager drops and leave the product to the FMA kernel
  // (a float operand has no tensor-core or cuBLASLt route).
  const Case c = lower_case("norm_linear_bf16");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const Json& plan = c.lowering.plan;
  ASSERT_EQ(kernel_kinds(plan), (std::vector<std::string>{"reduce", "pointwise", "matmul"}))
      << plan.dump(1);
  const std::string operand = plan["kernels"][2]["a"]["buffer"];
  Json temp;
  for (const Json& buffer : plan["buffers"])
    if (buffer["name"] == operand) temp = buffer;
  EXPECT_EQ(temp["kind"], "temp") << plan.dump(1);
  EXPECT_EQ(temp["dtype"], "bfloat16") << plan.dump(1);
  const int64_t tokens = 3, hidden = 8, features = 6;
  check_semantics(
      c, {{"tokens", tokens}},
      [&](const PlanBuffers& in) {
        std::vector<double> normed;
        for (int64_t t = 0; t < tokens; ++t) {
          const double scale = inverse_rms(in.at("x"), t, hidden);
          for (int64_t h = 0; h < hidden; ++h) {
            const double row = rounded(DType::BFloat16, in.at("x")[t * hidden + h] * scale);
            normed.push_back(rounded(DType::BFloat16, row * in.at("norm_weight")[h]));
          }
        }
        return PlanBuffers{{"output", matmul(normed, in.at("proj"), tokens, features, hidden)}};
      },
      1e-2);
}

TEST(LowerPlan, BmmReadsATransposedOperandWithItsStrides) {
  const Case c = lower_case("bmm_bt");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"matmul"});
  EXPECT_EQ(c.lowering.plan["kernels"][0]["batch"], Json::array({"b"}));
  check_semantics(c, {{"b", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", matmul(in.at("a"), in.at("bt"), 3, 4, 5, 2)}};
  });
}

TEST(LowerPlan, TwoMatmulsFeedingGeluTanhTimesUp) {
  const Case c = lower_case("gemma_swiglu");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"matmul", "matmul"}));
  EXPECT_EQ(temp_count(c.lowering.plan), 1);
  check_semantics(c, {{"m", 3}}, [&](const PlanBuffers& in) {
    const auto gate = matmul(in.at("x"), in.at("w_gate"), 3, 6, 5);
    const auto up = matmul(in.at("x"), in.at("w_up"), 3, 6, 5);
    std::vector<double> out;
    for (std::size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i];
      out.push_back(0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))) *
                    up[i]);
    }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, AnEpilogueAfterALinearLayersReshapeIsTheProductsEpilogue) {
  // F.linear on [b, s, k] traces as a [b*s, n] product reshaped to [b, s, n]: the relu, the
  // per-column scale and the residual are computed over the product's shape, in its kernel.
  const Case c = lower_case("linear3d_residual");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"matmul"});
  EXPECT_EQ(temp_count(c.lowering.plan), 0);
  EXPECT_EQ(c.lowering.plan["kernels"][0]["stores"][0]["buffer"], "output");
  check_semantics(c, {{"b", 2}}, [&](const PlanBuffers& in) {
    auto out = matmul(in.at("x"), in.at("weight"), 6, 6, 5);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = std::max(out[i], 0.0) * in.at("scale")[i % 6] + in.at("residual")[i];
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, RopeThroughAStackOfInterleavedPairsIsOnePointwiseKernel) {
  const Case c = lower_case("rope_interleaved");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"pointwise"});
  check_semantics(c, {{"tokens", 3}}, [&](const PlanBuffers& in) {
    std::vector<double> out;
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t i = 0; i < 4; ++i) {
        const double x1 = in.at("x")[t * 8 + 2 * i], x2 = in.at("x")[t * 8 + 2 * i + 1];
        const double cs = in.at("cos")[t * 4 + i], sn = in.at("sin")[t * 4 + i];
        out.push_back(x1 * cs - x2 * sn);
        out.push_back(x2 * cs + x1 * sn);
      }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerPlan, ConvolutionIsIm2colAndAMatmul) {
  // K = 2 channels x 3x3 = 18 elements: long enough for im2col. More cases, checked through the
  // interpreter (the direct form's too), are in window_lower_test.cpp.
  const Case c = lower_case("conv");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"pointwise", "matmul"}));
}

}  // namespace
}  // namespace kernelarc
