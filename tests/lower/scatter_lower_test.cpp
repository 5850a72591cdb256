// Scatters lowered end to end (tests/data/lower/scatter_*, traced by the tracer from their
// references): the plan keeps the inputs unwritten, copies the base into a temp and scatters
// into it; its results through the plan interpreter match values computed here, duplicates
// included (the integer inputs are drawn from [0, 4), so indices repeat).
#include <gtest/gtest.h>

#include "lower_case.h"

namespace kernelarc {
namespace {

using namespace lower_test;

auto as_index(double value) {
  return static_cast<std::size_t>(static_cast<int64_t>(value));
}

/// Every store of the plan writes an output or a temp, never an input.
void expect_inputs_unwritten(const Case& c) {
  for (const auto& kernel : c.lowering.plan["kernels"])
    for (const auto& store : kernel["stores"])
      for (const auto& input : c.definition.inputs)
        EXPECT_NE(store["buffer"], input.name) << kernel.dump();
}

TEST(LowerScatter, InPlaceIndexAddIntoAReturnedInputAccumulatesDuplicates) {
  // x.index_add_(0, idx, src); return x (an MoE combine step): the input stays as it was.
  const Case c = lower_case("scatter_index_add");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  // The copy of x and the scatter write the output itself: no temp, no copy after.
  EXPECT_EQ(kernel_kinds(c.lowering.plan), (std::vector<std::string>{"pointwise", "scatter"}));
  EXPECT_EQ(temp_count(c.lowering.plan), 0);
  EXPECT_EQ(c.lowering.plan["kernels"][1]["accumulate"], true);
  expect_inputs_unwritten(c);
  const int64_t rows = 5, m = 7, h = 3;
  check_semantics(c, {{"batch_size", rows}}, [&](const PlanBuffers& in) {
    std::vector<double> out = in.at("x");
    for (int64_t j = 0; j < m; ++j)
      for (int64_t d = 0; d < h; ++d)
        out[as_index(in.at("idx")[j]) * h + d] += in.at("src")[j * h + d];
    return PlanBuffers{{"output", out}};
  });
}

TEST(LowerScatter, IndexPutWithALeadingNoneWrapsNegativeIndicesAndAccumulatesOrWrites) {
  // added: x[:, i - 4] += v as index_put(accumulate=True) (negative indices count from the
  // end); written: x[:, i] = 2v (a duplicate's last value wins in domain order); alpha:
  // index_add along dim 1 with alpha 0.5.
  const Case c = lower_case("scatter_index_put");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_inputs_unwritten(c);
  int scatters = 0;
  for (const auto& kind : kernel_kinds(c.lowering.plan)) scatters += kind == "scatter";
  EXPECT_EQ(scatters, 3);
  const int64_t batch = 2, n = 6, k = 5, h = 2;
  check_semantics(c, {{"batch_size", batch}}, [&](const PlanBuffers& in) {
    const auto& x = in.at("x");
    std::vector<double> added = x, written = x, alpha = x;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < k; ++t)
        for (int64_t d = 0; d < h; ++d) {
          const auto i = static_cast<int64_t>(in.at("i")[as_index(t)]);
          const double v = in.at("v")[as_index((b * k + t) * h + d)];
          added[as_index((b * n + (i - 4 + n)) * h + d)] += v;
          written[as_index((b * n + i) * h + d)] = 2 * v;
          alpha[as_index((b * n + i) * h + d)] += 0.5 * v;
        }
    return PlanBuffers{{"added", added}, {"written", written}, {"alpha", alpha}};
  });
}

TEST(LowerScatter, ScatterAddAlongDimOneAndScatterOfAValue) {
  const Case c = lower_case("scatter_add_dim1");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_inputs_unwritten(c);
  const int64_t batch = 3, n = 5, k = 8;
  check_semantics(c, {{"batch_size", batch}}, [&](const PlanBuffers& in) {
    std::vector<double> added = in.at("x"), filled = in.at("x");
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < k; ++t) {
        const std::size_t at = as_index(b * n + in.at("idx")[as_index(b * k + t)]);
        added[at] += in.at("src")[as_index(b * k + t)];
        filled[at] = 2.5;
      }
    return PlanBuffers{{"added", added}, {"filled", filled}};
  });
}

TEST(LowerScatter, SetitemThroughAFullSliceIsReadAsTheWrittenTensor) {
  // written = x.clone(); written[:, i] = 2v; bumped = x.clone(); bumped[:, i] += v: each write
  // goes through a slice view of the clone, and the clone itself is returned.
  const Case c = lower_case("scatter_setitem");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_inputs_unwritten(c);
  const int64_t batch = 2, n = 6, k = 5, h = 2;
  check_semantics(c, {{"batch_size", batch}}, [&](const PlanBuffers& in) {
    const auto& x = in.at("x");
    std::vector<double> written = x, bumped = x;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < k; ++t)
        for (int64_t d = 0; d < h; ++d) {
          const std::size_t at = as_index((b * n + in.at("i")[as_index(t)]) * h + d);
          const double v = in.at("v")[as_index((b * k + t) * h + d)];
          written[at] = 2 * v;
          bumped[at] = x[at] + v;  // a gather, an add and a write: duplicates do not add up
        }
    return PlanBuffers{{"written", written}, {"bumped", bumped}};
  });
}

TEST(LowerScatter, AssignmentThroughABooleanMaskIsAPointwiseWhere) {
  // y[:, x[0] < 0] = -1e4 (a mask over the trailing dims, after a None); z[z > 0.5] += 1 as
  // index_put_(accumulate=True); k[k < 2] = 7 on integers. Each is one value, so no scatter.
  const Case c = lower_case("scatter_mask_assign");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  expect_inputs_unwritten(c);
  for (const auto& kind : kernel_kinds(c.lowering.plan)) EXPECT_EQ(kind, "pointwise");
  const int64_t batch = 3, rc = 12;
  check_semantics(c, {{"batch_size", batch}}, [&](const PlanBuffers& in) {
    const auto& x = in.at("x");
    std::vector<double> y = x, z = x, k = in.at("idx");
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t e = 0; e < rc; ++e) {
        const std::size_t at = as_index(b * rc + e);
        if (x[as_index(e)] < 0) y[at] = -1e4;
        if (x[at] > 0.5) z[at] += 1;
      }
    for (double& value : k)
      if (value < 2) value = 7;
    return PlanBuffers{{"y", y}, {"z", z}, {"k", k}};
  });
}

TEST(LowerScatter, AnInPlaceScatterIntoPartOfATensorIsRefusedByName) {
  // y = x.clone(); y[:, 1:].index_add_(0, i, v): the write stays in place, which is not lowered.
  const Case c = lower_case("scatter_into_slice");
  EXPECT_FALSE(c.lowering.ok);
  EXPECT_NE(c.lowering.reason.find("aten.index_add_.default (op 3) writes in place into a slice"),
            std::string::npos)
      << c.lowering.reason;
}

TEST(LowerScatter, SizesNameTheExprAxesThatShapesGiveNotVarAxesNoShapeNames) {
  // SOL-ExecBench's moe_index_add: tensors are [batch_seq_len, h] and [num_selected_tokens, h],
  // expr axes of batch_size, seq_len and num_experts_per_tok, which no shape names.
  const Case c = lower_case("moe_index_add");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const Json& plan = c.lowering.plan;
  EXPECT_EQ(plan["kernels"][0]["domain"], Json::array({"batch_seq_len", "8"}));
  EXPECT_EQ(plan["kernels"][1]["domain"], Json::array({"num_selected_tokens", "8"}));
  EXPECT_EQ(plan.dump().find("batch_size"), std::string::npos) << plan.dump();
  const int64_t rows = 4, tokens = 8, h = 8;
  check_semantics(c, {{"batch_size", 2}, {"seq_len", 2}, {"num_experts_per_tok", 2}},
                  [&](const PlanBuffers& in) {
                    std::vector<double> out = in.at("final_hidden_states");
                    for (int64_t t = 0; t < tokens; ++t)
                      for (int64_t d = 0; d < h; ++d)
                        out[as_index(in.at("token_indices")[as_index(t)] * h + d)] +=
                            in.at("expert_outputs")[as_index(t * h + d)];
                    EXPECT_EQ(out.size(), static_cast<std::size_t>(rows * h));
                    return PlanBuffers{{"output", out}};
                  });
}

}  // namespace
}  // namespace kernelarc
