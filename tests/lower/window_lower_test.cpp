// Pooling and convolution lowered as reduce kernels (a matmul for a 1x1 convolution, im2col and
// a matmul for other convolutions of one group), on op graphs as the tracer writes them
// (tests/data/lower_window/<case>, traced with torch 1.13 from the definition next to them). The
// plan's semantics go through the reference interpreter and are compared with direct loops
// written here the way torch's CPU kernels compute them.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

#include "lower_case.h"
#include "synth/kernel_plan.h"
#include "synth/library_matmul.h"

namespace kernelarc {
namespace {

using namespace lower_test;

Case window_case(const std::string& name) {
  const std::string dir = std::string(KERNELARC_SOURCE_DIR) + "/tests/data/lower_window/" + name;
  Case c{load_definition(dir + "/definition.json"),
         parse_op_graph(parse_json_text(read_text_file(dir + "/graph.json"), "graph.json"),
                        "graph.json"),
         {}};
  c.lowering = lower_to_plan(c.graph, c.definition);
  return c;
}

bool has_note(const Case& c, std::string_view text) {
  return std::any_of(c.lowering.notes.begin(), c.lowering.notes.end(),
                     [&](const std::string& note) { return note.find(text) != std::string::npos; });
}

/// Up to three spatial dims; a 1-d or 2-d op puts 1s in front.
using Dims = std::array<int64_t, 3>;

int64_t volume(const Dims& d) {
  return d[0] * d[1] * d[2];
}

/// Per spatial dim: window o covers [start, end) of the input with step `dilation`, where
/// `pad_end` bounds the padded window (torch's hend = min(hstart + k, H + pad)).
struct PoolSpec {
  Dims kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  bool adaptive = false;
};

struct Window {
  int64_t start, end, step, padded_length;
};

Window window(const PoolSpec& p, int j, int64_t o, int64_t in, int64_t out) {
  if (p.adaptive) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end, 1, end - start};
  }
  const int64_t start = o * p.stride[j] - p.padding[j];
  const int64_t padded_end = std::min(start + p.kernel[j], in + p.padding[j]);
  const int64_t end = std::min(start + (p.kernel[j] - 1) * p.dilation[j] + 1, in);
  return {start, end, p.dilation[j], padded_end - start};
}

/// Every output point (planes of `planes` leading elements) with the input positions of its
/// window: f(plane, out flat, positions as flat input indices within the plane, padded count).
template <typename F>
void for_each_window(int64_t planes, const Dims& in, const Dims& out, const PoolSpec& p, F f) {
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          const Window w0 = window(p, 0, o0, in[0], out[0]);
          const Window w1 = window(p, 1, o1, in[1], out[1]);
          const Window w2 = window(p, 2, o2, in[2], out[2]);
          std::vector<int64_t> positions;
          const auto first = [](const Window& w) {
            int64_t s = w.start;
            while (s < 0) s += w.step;
            return s;
          };
          for (int64_t i0 = first(w0); i0 < w0.end; i0 += w0.step)
            for (int64_t i1 = first(w1); i1 < w1.end; i1 += w1.step)
              for (int64_t i2 = first(w2); i2 < w2.end; i2 += w2.step)
                positions.push_back((i0 * in[1] + i1) * in[2] + i2);
          const int64_t padded = w0.padded_length * w1.padded_length * w2.padded_length;
          f(plane, (plane * out[0] + o0) * out[1] * out[2] + o1 * out[2] + o2, positions, padded);
        }
  }
}

std::vector<double> avg_pool(const std::vector<double>& x, int64_t planes, const Dims& in,
                             const Dims& out, const PoolSpec& p, bool include_pad,
                             double divisor_override = 0) {
  std::vector<double> result(static_cast<std::size_t>(planes * volume(out)));
  for_each_window(planes, in, out, p,
                  [&](int64_t plane, int64_t at, const auto& positions, int64_t padded) {
                    double sum = 0;
                    for (const int64_t i : positions)
                      sum += x[static_cast<std::size_t>(plane * volume(in) + i)];
                    const double count = divisor_override > 0 ? divisor_override
                                         : include_pad        ? static_cast<double>(padded)
                                                       : static_cast<double>(positions.size());
                    result[static_cast<std::size_t>(at)] = sum / count;
                  });
  return result;
}

/// Values and torch's indices (the first maximum's position within the input plane).
std::pair<std::vector<double>, std::vector<double>> max_pool(const std::vector<double>& x,
                                                             int64_t planes, const Dims& in,
                                                             const Dims& out, const PoolSpec& p) {
  std::vector<double> values(static_cast<std::size_t>(planes * volume(out)));
  std::vector<double> indices(values.size());
  for_each_window(planes, in, out, p,
                  [&](int64_t plane, int64_t at, const auto& positions, int64_t) {
                    double best = -std::numeric_limits<double>::infinity();
                    int64_t best_index = positions.front();
                    for (const int64_t i : positions) {
                      const double v = x[static_cast<std::size_t>(plane * volume(in) + i)];
                      if (v > best) {
                        best = v;
                        best_index = i;
                      }
                    }
                    values[static_cast<std::size_t>(at)] = best;
                    indices[static_cast<std::size_t>(at)] = static_cast<double>(best_index);
                  });
  return {values, indices};
}

TEST(LowerWindow, AvgPool2dWithPaddingAndCeilModeCountsThePadOrNot) {
  for (const bool include_pad : {true, false}) {
    const Case c = window_case(include_pad ? "avg_pool2d_include_pad" : "avg_pool2d_exclude_pad");
    ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
    ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
    const Json& kernel = c.lowering.plan["kernels"][0];
    EXPECT_EQ(kernel["domain"], Json::array({"n", "2", "4", "4"}));
    EXPECT_EQ(kernel["reduce"], Json::array({"3", "3"}));
    EXPECT_EQ(temp_count(c.lowering.plan), 0);
    PoolSpec p;
    p.kernel = {1, 3, 3};
    p.stride = {1, 2, 2};
    p.padding = {0, 1, 1};
    check_semantics(c, {{"n", 2}}, [&](const PlanBuffers& in) {
      return PlanBuffers{{"output", avg_pool(in.at("x"), 4, {1, 7, 6}, {1, 4, 4}, p, include_pad)}};
    });
  }
}

TEST(LowerWindow, AvgPool3dWithDivisorOverride) {
  const Case c = window_case("avg_pool3d_divisor");
  PoolSpec p;
  p.kernel = {2, 2, 2};
  p.stride = {2, 2, 2};
  check_semantics(c, {{"n", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", avg_pool(in.at("x"), 4, {5, 4, 6}, {2, 2, 3}, p, true, 3)}};
  });
}

TEST(LowerWindow, MaxPool1dWithDilationAndPadding) {
  const Case c = window_case("max_pool1d_dilation");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"})
      << "the squeezed output is stored by the pooling kernel";
  const Json& kernel = c.lowering.plan["kernels"][0];
  ASSERT_EQ(kernel["stages"].size(), 1u) << "the indices nothing reads are not computed";
  EXPECT_EQ(kernel["stages"][0]["op"], "max");
  PoolSpec p;
  p.kernel = {1, 1, 3};
  p.stride = {1, 1, 2};
  p.padding = {0, 0, 1};
  p.dilation = {1, 1, 2};
  check_semantics(c, {{"n", 3}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", max_pool(in.at("x"), 9, {1, 1, 11}, {1, 1, 5}, p).first}};
  });
}

TEST(LowerWindow, MaxPool2dReturnsTorchIndices) {
  const Case c = window_case("max_pool2d_indices");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  const Json& stages = c.lowering.plan["kernels"][0]["stages"];
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0]["op"], "max");
  EXPECT_EQ(stages[1]["op"], "argmax");
  PoolSpec p;
  p.kernel = {1, 3, 3};
  p.stride = {1, 2, 2};
  p.padding = {0, 1, 1};
  check_semantics(c, {{"n", 2}}, [&](const PlanBuffers& in) {
    const auto [values, indices] = max_pool(in.at("x"), 4, {1, 6, 7}, {1, 3, 4}, p);
    return PlanBuffers{{"values", values}, {"indices", indices}};
  });
}

TEST(LowerWindow, MaxPool3d) {
  const Case c = window_case("max_pool3d");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  EXPECT_EQ(c.lowering.plan["kernels"][0]["reduce"], Json::array({"3", "3", "3"}));
  PoolSpec p;
  p.kernel = {3, 3, 3};
  p.stride = {2, 2, 2};
  p.padding = {1, 1, 1};
  check_semantics(c, {{"n", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", max_pool(in.at("x"), 4, {5, 6, 5}, {3, 3, 3}, p).first}};
  });
}

TEST(LowerWindow, GlobalAveragePoolIsAMean) {
  const Case c = window_case("global_avg_pool");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  PoolSpec p;
  p.adaptive = true;
  check_semantics(c, {{"n", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", avg_pool(in.at("x"), 6, {1, 5, 6}, {1, 1, 1}, p, false)}};
  });
}

TEST(LowerWindow, AdaptivePoolsWithUnevenWindows) {
  PoolSpec p;
  p.adaptive = true;
  const Case avg = window_case("adaptive_avg_pool2d_uneven");
  ASSERT_TRUE(avg.lowering.ok) << avg.lowering.reason;
  // 5 -> 3 windows of up to 3 rows, 7 -> 4 windows of up to 3 columns.
  EXPECT_EQ(avg.lowering.plan["kernels"][0]["reduce"], Json::array({"3", "3"}));
  check_semantics(avg, {{"n", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", avg_pool(in.at("x"), 4, {1, 5, 7}, {1, 3, 4}, p, false)}};
  });
  const Case max = window_case("adaptive_max_pool2d");
  check_semantics(max, {{"n", 2}}, [&](const PlanBuffers& in) {
    return PlanBuffers{{"output", max_pool(in.at("x"), 4, {1, 5, 7}, {1, 3, 4}, p).first}};
  });
}

struct ConvSpec {
  int64_t batch = 2, in_channels = 1, out_channels = 1, groups = 1;
  Dims in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  Dims stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  bool transposed = false;
};

/// torch's convolution; the transposed one scatters every input element into the outputs it
/// reaches (o = i * stride - padding + k * dilation), the way its definition reads.
std::vector<double> convolution(const ConvSpec& s, const std::vector<double>& x,
                                const std::vector<double>& w, const std::vector<double>* bias) {
  std::vector<double> out(static_cast<std::size_t>(s.batch * s.out_channels * volume(s.out)), 0);
  const int64_t in_per_group = s.in_channels / s.groups;
  const int64_t out_per_group = s.out_channels / s.groups;
  const auto x_at = [&](int64_t n, int64_t c, const Dims& i) {
    return x[static_cast<std::size_t>(
        ((n * s.in_channels + c) * s.in[0] + i[0]) * s.in[1] * s.in[2] + i[1] * s.in[2] + i[2])];
  };
  const auto w_at = [&](int64_t a, int64_t b, const Dims& k) {
    const int64_t second = s.transposed ? out_per_group : in_per_group;
    return w[static_cast<std::size_t>(((a * second + b) * s.kernel[0] + k[0]) * s.kernel[1] *
                                          s.kernel[2] +
                                      k[1] * s.kernel[2] + k[2])];
  };
  const auto out_at = [&](int64_t n, int64_t c, const Dims& o) -> double& {
    return out[static_cast<std::size_t>(((n * s.out_channels + c) * s.out[0] + o[0]) * s.out[1] *
                                            s.out[2] +
                                        o[1] * s.out[2] + o[2])];
  };
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t co = 0; co < s.out_channels; ++co) {
      const int64_t g = co / out_per_group;
      for (int64_t ci = 0; ci < in_per_group; ++ci)
        for (int64_t k0 = 0; k0 < s.kernel[0]; ++k0)
          for (int64_t k1 = 0; k1 < s.kernel[1]; ++k1)
            for (int64_t k2 = 0; k2 < s.kernel[2]; ++k2) {
              const Dims k{k0, k1, k2};
              const int64_t c = g * in_per_group + ci;
              if (s.transposed) {
                for (int64_t i0 = 0; i0 < s.in[0]; ++i0)
                  for (int64_t i1 = 0; i1 < s.in[1]; ++i1)
                    for (int64_t i2 = 0; i2 < s.in[2]; ++i2) {
                      const Dims i{i0, i1, i2};
                      Dims o{};
                      bool inside = true;
                      for (int j = 0; j < 3; ++j) {
                        o[j] = i[j] * s.stride[j] - s.padding[j] + k[j] * s.dilation[j];
                        inside = inside && o[j] >= 0 && o[j] < s.out[j];
                      }
                      if (inside)
                        out_at(n, co, o) += x_at(n, c, i) * w_at(c, co % out_per_group, k);
                    }
                continue;
              }
              for (int64_t o0 = 0; o0 < s.out[0]; ++o0)
                for (int64_t o1 = 0; o1 < s.out[1]; ++o1)
                  for (int64_t o2 = 0; o2 < s.out[2]; ++o2) {
                    const Dims o{o0, o1, o2};
                    Dims i{};
                    bool inside = true;
                    for (int j = 0; j < 3; ++j) {
                      i[j] = o[j] * s.stride[j] - s.padding[j] + k[j] * s.dilation[j];
                      inside = inside && i[j] >= 0 && i[j] < s.in[j];
                    }
                    if (inside) out_at(n, co, o) += x_at(n, c, i) * w_at(co, ci, k);
                  }
            }
      if (bias) {
        for (int64_t o = 0; o < volume(s.out); ++o) {
          out[static_cast<std::size_t>((n * s.out_channels + co) * volume(s.out) + o)] +=
              (*bias)[static_cast<std::size_t>(co)];
        }
      }
    }
  return out;
}

/// `vars`: the batch as axis n unless given (a case whose batch is a constant has none).
void check_convolution(const Case& c, const ConvSpec& s,
                       std::optional<AxisValues> vars = std::nullopt) {
  check_semantics(c, vars.value_or(AxisValues{{"n", s.batch}}), [&](const PlanBuffers& in) {
    const auto bias = in.find("b");
    return PlanBuffers{{"output", convolution(s, in.at("x"), in.at("w"),
                                              bias == in.end() ? nullptr : &bias->second)}};
  });
}

/// Whether every coord of a LOAD is a plain index dim: no floordiv, mod or clamp.
bool plain_coords(const Json& access) {
  return std::all_of(access["coords"].begin(), access["coords"].end(),
                     [](const Json& coord) { return coord[0] == "idx"; });
}

/// The im2col form's plan: kernel `col` (pointwise) writes a temp that the matmul after it
/// reads as B, both operands plain strided matrices, so that cuBLASLt's route takes the product.
void expect_im2col(const Case& c, std::size_t col, const std::string& k) {
  const Json& plan = c.lowering.plan;
  ASSERT_GT(plan["kernels"].size(), col + 1);
  ASSERT_EQ(plan["kernels"][col]["kind"], "pointwise");
  const Json& matmul = plan["kernels"][col + 1];
  ASSERT_EQ(matmul["kind"], "matmul");
  EXPECT_EQ(matmul["k"], k);
  const Json& stores = plan["kernels"][col]["stores"];
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(matmul["b"]["buffer"], stores[0]["buffer"]) << "B is the col temp";
  EXPECT_EQ(matmul["a"]["buffer"], "w");
  EXPECT_TRUE(plain_coords(matmul["a"])) << matmul["a"].dump();
  EXPECT_TRUE(plain_coords(matmul["b"])) << matmul["b"].dump();
  EXPECT_TRUE(has_note(c, "lowered as im2col + matmul"));
  EXPECT_FALSE(has_note(c, "direct convolution"));
  const LibraryPlan library = with_library_matmuls(parse_kernel_plan(plan, "lowered"));
  ASSERT_EQ(library.matmuls.size(), 1u) << "cuBLASLt's route does not take the product";
  EXPECT_EQ(library.matmuls[0].kernel, col + 1);
}

void expect_direct(const Case& c) {
  EXPECT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"reduce"});
  EXPECT_TRUE(has_note(c, "direct convolution: correct, not tuned"));
  EXPECT_FALSE(has_note(c, "im2col"));
}

TEST(LowerWindow, Conv2dWithStridePaddingDilationAndBiasIsIm2colAndAMatmul) {
  const Case c = window_case("conv2d_strided");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"pointwise", "matmul"}));
  // col[n, ci, r0, r1, o0, o1]: K = 3 * 3 * 2 = 18 rows of P = 3 * 11 positions per batch.
  const Json& col = c.lowering.plan["kernels"][0];
  EXPECT_EQ(col["domain"], Json::array({"n", "3", "3", "2", "3", "11"}));
  const Json& matmul = c.lowering.plan["kernels"][1];
  EXPECT_EQ(matmul["batch"], Json::array({"n"}));
  EXPECT_EQ(matmul["m"], "4");
  EXPECT_EQ(matmul["n"], "33");
  EXPECT_EQ(matmul["a"]["strides"], Json::array({"18", "1"}));
  EXPECT_EQ(matmul["b"]["strides"], Json::array({"594", "33", "1"}));
  EXPECT_EQ(temp_count(c.lowering.plan), 1) << "col; the bias is the matmul's epilogue";
  EXPECT_EQ(c.lowering.plan["buffers"].back()["elements"], "n*594");
  EXPECT_EQ(c.lowering.plan["buffers"].back()["dtype"], "float32") << "x's dtype";
  expect_im2col(c, 0, "18");
  ConvSpec s;
  s.in_channels = 3;
  s.out_channels = 4;
  s.in = {1, 7, 8};
  s.out = {1, 3, 11};
  s.kernel = {1, 3, 2};
  s.stride = {1, 2, 1};
  s.padding = {0, 1, 2};
  s.dilation = {1, 2, 1};
  check_convolution(c, s);
}

TEST(LowerWindow, DepthwiseConv2dWithAChannelMultiplier) {
  const Case c = window_case("conv2d_depthwise");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_direct(c);  // groups > 1 (depthwise) keep the direct form
  EXPECT_EQ(c.lowering.plan["kernels"][0]["reduce"], Json::array({"1", "3", "3"}));
  ConvSpec s;
  s.in_channels = 4;
  s.out_channels = 8;
  s.groups = 4;
  s.in = {1, 6, 6};
  s.out = {1, 6, 6};
  s.kernel = {1, 3, 3};
  s.padding = {0, 1, 1};
  check_convolution(c, s);
}

TEST(LowerWindow, Conv1dWithAShortReductionStaysDirect) {
  const Case c = window_case("conv1d");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_direct(c);  // K = 3 * 4 = 12, under the im2col threshold of 16
  EXPECT_EQ(c.lowering.plan["kernels"][0]["reduce"], Json::array({"3", "4"}));
  ConvSpec s;
  s.in_channels = 3;
  s.out_channels = 5;
  s.in = {1, 1, 10};
  s.out = {1, 1, 4};
  s.kernel = {1, 1, 4};
  s.stride = {1, 1, 2};
  check_convolution(c, s);
}

TEST(LowerWindow, ConvTranspose2dGathersTheInputsThatReachEachOutput) {
  const Case c = window_case("conv_transpose2d");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_direct(c);
  EXPECT_EQ(c.lowering.plan["kernels"][0]["reduce"], Json::array({"2", "3", "3"}));
  ConvSpec s;
  s.in_channels = 4;
  s.out_channels = 4;
  s.groups = 2;
  s.in = {1, 3, 4};
  s.out = {1, 6, 8};
  s.kernel = {1, 3, 3};
  s.stride = {1, 2, 2};
  s.padding = {0, 1, 1};
  s.transposed = true;
  check_convolution(c, s);
}

TEST(LowerWindow, Conv3dWithStrideAndPaddingIsIm2colAndAMatmul) {
  const Case c = window_case("conv3d_padded");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"pointwise", "matmul"}));
  EXPECT_EQ(c.lowering.plan["kernels"][0]["domain"],
            Json::array({"n", "2", "2", "3", "2", "5", "2", "4"}));
  expect_im2col(c, 0, "24");
  check_convolution(c, {.in_channels = 2,
                        .out_channels = 3,
                        .in = {4, 5, 6},
                        .out = {5, 2, 4},
                        .kernel = {2, 3, 2},
                        .stride = {1, 2, 2},
                        .padding = {1, 0, 1}});
}

TEST(LowerWindow, Conv1dOfOneBatchWithDilationAndPaddingIsIm2colAndAMatmul) {
  const Case c = window_case("conv1d_dilated_padded");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"pointwise", "matmul"}));
  expect_im2col(c, 0, "20");
  // A batch of one: B has no batch coord.
  EXPECT_EQ(c.lowering.plan["kernels"][1]["b"]["coords"].size(), 2u);
  const ConvSpec s{.batch = 1,
                   .in_channels = 4,
                   .out_channels = 5,
                   .in = {1, 1, 12},
                   .out = {1, 1, 5},
                   .kernel = {1, 1, 5},
                   .stride = {1, 1, 2},
                   .padding = {0, 0, 3},
                   .dilation = {1, 1, 2}};
  check_convolution(c, s, AxisValues{});
}

TEST(LowerWindow, Im2colInlinesTheInputsWorkAndCopiesATransposedWeight) {
  // relu(conv2d(tanh(x), w.transpose(0, 1), b, padding=1)): tanh runs in the col kernel, the
  // weight view is copied row-major so that A stays a plain matrix, bias and relu are the
  // matmul's epilogue.
  const Case c = window_case("conv2d_tanh_relu");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan),
            (std::vector<std::string>{"pointwise", "pointwise", "matmul"}));
  const Json& plan = c.lowering.plan;
  EXPECT_EQ(temp_count(plan), 2) << "the weight's copy and col";
  EXPECT_NE(plan["kernels"][1]["stores"][0]["value"].dump().find("tanh"), std::string::npos);
  EXPECT_EQ(plan["kernels"][2]["a"]["buffer"], plan["kernels"][0]["stores"][0]["buffer"]);
  EXPECT_NE(plan["kernels"][2]["stores"][0]["value"].dump().find("relu"), std::string::npos);
  const Json& matmul = plan["kernels"][2];
  EXPECT_TRUE(plain_coords(matmul["a"]) && plain_coords(matmul["b"]));
  EXPECT_EQ(with_library_matmuls(parse_kernel_plan(plan, "lowered")).matmuls.size(), 1u);
  const ConvSpec s{.in_channels = 4,
                   .out_channels = 6,
                   .in = {1, 5, 6},
                   .out = {1, 5, 6},
                   .kernel = {1, 3, 3},
                   .padding = {0, 1, 1}};
  check_semantics(c, {{"n", s.batch}}, [&](const PlanBuffers& in) {
    std::vector<double> x = in.at("x");
    for (double& v : x) v = std::tanh(v);
    std::vector<double> w(in.at("w").size());  // [ci 4, co 6, 3, 3] -> [co, ci, 3, 3]
    for (std::size_t ci = 0; ci < 4; ++ci)
      for (std::size_t co = 0; co < 6; ++co)
        for (std::size_t r = 0; r < 9; ++r)
          w[(co * 4 + ci) * 9 + r] = in.at("w")[(ci * 6 + co) * 9 + r];
    std::vector<double> out = convolution(s, x, w, &in.at("b"));
    for (double& v : out) v = std::max(v, 0.0);
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerWindow, PointwiseConvolutionIsAMatmulOverChannels) {
  const Case c = window_case("conv1x1");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(kernel_kinds(c.lowering.plan), std::vector<std::string>{"matmul"});
  const Json& kernel = c.lowering.plan["kernels"][0];
  EXPECT_EQ(kernel["batch"], Json::array({"n"}));
  EXPECT_EQ(kernel["m"], "3");
  EXPECT_EQ(kernel["n"], "20");
  EXPECT_EQ(kernel["k"], "6");
  EXPECT_EQ(temp_count(c.lowering.plan), 0) << "the bias is the matmul's epilogue";
  ConvSpec s;
  s.in_channels = 6;
  s.out_channels = 3;
  s.in = {1, 5, 4};
  s.out = {1, 5, 4};
  check_convolution(c, s);
}

}  // namespace
}  // namespace kernelarc
