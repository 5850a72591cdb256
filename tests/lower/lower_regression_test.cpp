// Regressions found by running plan_check over SOL-ExecBench and KernelBench problems: one case
// per class of lowering bug, each on a graph as the tracer writes it (tests/data/lower/<case>).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "lower_case.h"

namespace kernelarc {
namespace {

using namespace lower_test;

TEST(LowerRegression, AValueReusedByInliningIsStoredBeyondASize) {
  const Case c = lower_case("reuse_chain");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  // Inlined, the 12 steps of y * sigmoid(y) + 0.5 * y would need 3^12 copies of x.
  EXPECT_LT(plan_expression_nodes(c.lowering.plan), 2000);
  EXPECT_GT(temp_count(c.lowering.plan), 0);
  check_semantics(
      c, {{"batch_size", 2}},
      [](const PlanBuffers& in) {
        std::vector<double> out;
        for (double y : in.at("x")) {
          for (int step = 0; step < 12; ++step) {
            y = static_cast<float>(static_cast<float>(y * (1 / (1 + std::exp(-y)))) + 0.5 * y);
          }
          out.push_back(y);
        }
        return PlanBuffers{{"output", out}};
      },
      1e-4);
}

TEST(LowerRegression, VectorNormArgumentsArePAndDimNotDim) {
  // norm(x, p, dim, keepdim): argument 1 is p; var(x, unbiased) reduces every dim.
  const Case c = lower_case("vector_norms");
  const int64_t rows = 3, n = 5;
  check_semantics(c, {{"batch_size", rows}}, [&](const PlanBuffers& in) {
    const auto& x = in.at("x");
    std::vector<double> l2, l1, deviation;
    double total = 0, squares = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double sum_sq = 0, sum_abs = 0, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double v = x[r * n + j];
        sum_sq += v * v;
        sum_abs += std::fabs(v);
        sum += v;
      }
      for (int64_t j = 0; j < n; ++j) l2.push_back(x[r * n + j] / std::sqrt(sum_sq));
      l1.push_back(sum_abs);
      double centered = 0;
      for (int64_t j = 0; j < n; ++j) centered += std::pow(x[r * n + j] - sum / n, 2);
      deviation.push_back(std::sqrt(centered / (n - 1)));
      total += sum;
    }
    for (const double v : x) squares += std::pow(v - total / (rows * n), 2);
    return PlanBuffers{
        {"l2", l2}, {"l1", l1}, {"variance", {squares / (rows * n)}}, {"deviation", deviation}};
  });
}

TEST(LowerRegression, InPlaceWritesNothingReadsAreLeftOut) {
  // Training-mode batch norm: the running statistics and the batch counter are updated in place
  // (copy_ into clones) and read by no output.
  const Case c = lower_case("batch_norm_training");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const int64_t rows = 2, channels = 3, width = 4;
  check_semantics(
      c, {{"batch_size", rows}},
      [&](const PlanBuffers& in) {
        const auto& x = in.at("x");
        std::vector<double> out(x.size());
        for (int64_t ch = 0; ch < channels; ++ch) {
          double sum = 0, squares = 0;
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t w = 0; w < width; ++w) sum += x[(r * channels + ch) * width + w];
          }
          const double mean = sum / (rows * width);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t w = 0; w < width; ++w) {
              squares += std::pow(x[(r * channels + ch) * width + w] - mean, 2);
            }
          }
          const double scale = 1 / std::sqrt(squares / (rows * width) + 1e-5);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t w = 0; w < width; ++w) {
              const int64_t at = (r * channels + ch) * width + w;
              out[at] = (x[at] - mean) * scale * in.at("weight")[ch] + in.at("bias")[ch];
            }
          }
        }
        return PlanBuffers{{"output", out}};
      },
      1e-4);
}

TEST(LowerRegression, GroupNormInFloat64WithAScalarInputEps) {
  // eps is the definition's float scalar input ({"input": "eps"}), read from its buffer; the
  // float64 problem computes in float64.
  const Case c = lower_case("group_norm_eps_f64");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_NE(c.lowering.plan.dump().find("\"buffer\":\"eps\""), std::string::npos);
  const int64_t rows = 2, channels = 4, width = 3, groups = 2;
  const int64_t group_size = channels / groups * width;
  check_semantics(
      c, {{"batch_size", rows}},
      [&](const PlanBuffers& in) {
        const auto& x = in.at("x");
        const double eps = in.at("eps")[0];
        std::vector<double> out(x.size());
        for (int64_t g = 0; g < rows * groups; ++g) {
          double sum = 0, squares = 0;
          for (int64_t i = 0; i < group_size; ++i) sum += x[g * group_size + i];
          const double mean = sum / group_size;
          for (int64_t i = 0; i < group_size; ++i)
            squares += std::pow(x[g * group_size + i] - mean, 2);
          const double scale = 1 / std::sqrt(squares / group_size + eps);
          for (int64_t i = 0; i < group_size; ++i) {
            const int64_t at = g * group_size + i;
            const int64_t channel = (at / width) % channels;
            out[at] = (x[at] - mean) * scale * in.at("weight")[channel] + in.at("bias")[channel];
          }
        }
        return PlanBuffers{{"output", out}};
      },
      1e-12);
}

TEST(LowerRegression, DiagEmbedFlattenedRollAndClassWeightedNllLoss) {
  // Ops of the contract's list that were not lowered: diag_embed (offset, dim1, dim2), roll
  // without dims (over the flattened tensor), nll_loss with class weights.
  const Case c = lower_case("contract_ops");
  const int64_t rows = 3, n = 4;
  check_semantics(
      c, {{"batch_size", rows}},
      [&](const PlanBuffers& in) {
        const auto& x = in.at("x");
        std::vector<double> diagonal(rows * n * n, 0.0), rolled(x.size());
        for (int64_t b = 0; b < rows; ++b) {
          for (int64_t i = 0; i + 1 < n; ++i) diagonal[(b * n + i) * n + i + 1] = x[b * n + i];
        }
        const auto total = static_cast<int64_t>(x.size());
        for (int64_t f = 0; f < total; ++f) rolled[f] = x[((f - 3) % total + total) % total];
        double picked = 0, weights = 0;
        for (int64_t b = 0; b < rows; ++b) {
          const auto t = static_cast<int64_t>(in.at("target")[b]);
          picked -= in.at("weight")[t] * x[b * n + t];
          weights += in.at("weight")[t];
        }
        return PlanBuffers{
            {"diagonal", diagonal}, {"rolled", rolled}, {"loss", {picked / weights}}};
      },
      1e-4);
}

TEST(LowerRegression, BitwiseOpsOnBoolsAndAScalarInputSlope) {
  // `&`, `|`, `^` on bools arrive as prims.bitwise_*; leaky_relu's slope is a scalar input.
  const Case c = lower_case("bool_bitwise_scalar_slope");
  check_semantics(c, {{"batch_size", 4}}, [](const PlanBuffers& in) {
    const double slope = in.at("slope")[0];
    std::vector<double> out;
    for (const double x : in.at("x")) {
      const bool keep = (x > 0 && x < 1) || ((x < -1) != (x < -1.5));
      out.push_back(keep ? (x > 0 ? x : x * static_cast<float>(slope)) : x * 2);
    }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerRegression, InPlaceOpsAreReadAsTheValuesTheyWrite) {
  // `relu(y, inplace=True)`, `y += bias`, `y.mul_(3)`: torch._decomp makes each a functional op
  // and a copy_ back into y (KernelBench's ResNets, VGGs and MobileNets are full of them).
  const Case c = lower_case("in_place_chain");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  for (const GraphNode& node : c.graph.nodes) EXPECT_NE(node.op, "aten.copy_.default");
  const int64_t width = 5;
  check_semantics(c, {{"batch_size", 3}}, [&](const PlanBuffers& in) {
    std::vector<double> out;
    const auto& x = in.at("x");
    for (std::size_t i = 0; i < x.size(); ++i) {
      out.push_back((std::max(2 * x[i], 0.0) + in.at("bias")[i % width]) * 3);
    }
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerRegression, IndexTensorsGatherWhereTheIndexedDimsWereOrFirstWhenApart) {
  // x[:, i, j] keeps the batch dim first; x[i, :, j] puts the indexed positions first (a Swin
  // block's relative-position table is read as table[index.view(-1)]).
  const Case c = lower_case("advanced_index");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const int64_t batch = 4, n = 5, m = 6, k = 3;
  check_semantics(c, {{"batch_size", batch}}, [&](const PlanBuffers& in) {
    const auto& x = in.at("x");
    const auto at = [&](int64_t b, int64_t r, int64_t col) { return x[(b * n + r) * m + col]; };
    std::vector<double> adjacent, apart;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < k; ++t)
        adjacent.push_back(
            at(b, static_cast<int64_t>(in.at("i")[t]), static_cast<int64_t>(in.at("j")[t])));
    for (int64_t t = 0; t < k; ++t)
      for (int64_t r = 0; r < n; ++r)
        apart.push_back(
            at(static_cast<int64_t>(in.at("i")[t]), r, static_cast<int64_t>(in.at("j")[t])));
    return PlanBuffers{{"adjacent", adjacent}, {"apart", apart}};
  });
}

TEST(LowerRegression, AnInPlaceWriteUnderAViewReadLaterIsRefusedNotMisread) {
  // `first = y[:, 0]; y.add_(1); return first`: first sees the addition in memory; a graph
  // that kept first's old value would compute 2x instead of 2x + 1.
  const Case c = lower_case("in_place_stale_view");
  EXPECT_FALSE(c.lowering.ok);
  EXPECT_NE(c.lowering.reason.find("such aliasing is not lowered"), std::string::npos)
      << c.lowering.reason;
}

}  // namespace
}  // namespace kernelarc
