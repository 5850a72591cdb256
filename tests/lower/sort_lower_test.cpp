// Selections lowered end to end (tests/data/lower/{topk_route,sort_dim0_descending,
// argsort_ascending,sort_stable_transposed}, traced by the tracer from their references): one topk
// kernel whose rows run along the selected dim, checked through the plan interpreter against a
// stable sort done here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lower_case.h"

namespace kernelarc {
namespace {

using namespace lower_test;

/// The positions of `row` in a stable order, largest first when `largest`.
std::vector<std::size_t> stable_order(const std::vector<double>& row, bool largest) {
  std::vector<std::size_t> order(row.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return largest ? row[a] > row[b] : row[a] < row[b];
  });
  return order;
}

int topk_kernels(const Json& plan) {
  const auto kinds = kernel_kinds(plan);
  return static_cast<int>(std::count(kinds.begin(), kinds.end(), "topk"));
}

TEST(LowerSort, MoeRoutingTakesTheTopEightOfASoftmaxAndRenormalizesThem) {
  // p = softmax(logits); w, ids = topk(p, 8); return w / w.sum(-1, keepdim=True), ids
  const Case c = lower_case("topk_route");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(topk_kernels(c.lowering.plan), 1) << c.lowering.plan.dump();
  const int64_t t = 3, e = 64, k = 8;
  check_semantics(c, {{"t", t}}, [&](const PlanBuffers& in) {
    std::vector<double> w, ids;
    for (int64_t row = 0; row < t; ++row) {
      const std::vector<double> logits(in.at("logits").begin() + row * e,
                                       in.at("logits").begin() + (row + 1) * e);
      // softmax is increasing in the logit: its top 8 are the logits' top 8.
      const std::vector<std::size_t> order = stable_order(logits, true);
      double total = 0;
      for (int64_t j = 0; j < k; ++j) total += std::exp(logits[order[j]]);
      for (int64_t j = 0; j < k; ++j) {
        w.push_back(rounded(DType::Float32, std::exp(logits[order[j]]) / total));
        ids.push_back(static_cast<double>(order[j]));
      }
    }
    return PlanBuffers{{"w", w}, {"ids", ids}};
  });
}

TEST(LowerSort, SortDescendingAlongTheFirstDimSortsEachColumn) {
  const Case c = lower_case("sort_dim0_descending");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(topk_kernels(c.lowering.plan), 1);
  // The columns are the kept points; the rows, along dim 0, are what each one orders.
  EXPECT_EQ(c.lowering.plan["kernels"][0]["domain"], Json::array({"5"}));
  const int64_t n = 7, m = 5;
  check_semantics(c, {{"n", n}}, [&](const PlanBuffers& in) {
    std::vector<double> values(static_cast<std::size_t>(n * m)), indices(values.size());
    for (int64_t col = 0; col < m; ++col) {
      std::vector<double> column;
      for (int64_t r = 0; r < n; ++r) column.push_back(in.at("x")[r * m + col]);
      const std::vector<std::size_t> order = stable_order(column, true);
      for (int64_t j = 0; j < n; ++j) {
        values[j * m + col] = column[order[j]];
        indices[j * m + col] = static_cast<double>(order[j]);
      }
    }
    return PlanBuffers{{"values", values}, {"indices", indices}};
  });
}

TEST(LowerSort, ArgsortAscendingKeepsEqualValuesInTheirOrder) {
  // argsort(x * 2 + 1) of integers drawn from [0, 4): rows of 6 always hold equal values.
  const Case c = lower_case("argsort_ascending");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(topk_kernels(c.lowering.plan), 1);
  EXPECT_EQ(c.lowering.plan["kernels"][0]["largest"], false);
  const int64_t rows = 4, n = 6;
  check_semantics(c, {{"rows", rows}}, [&](const PlanBuffers& in) {
    std::vector<double> order;
    for (int64_t row = 0; row < rows; ++row) {
      const std::vector<double> x(in.at("x").begin() + row * n, in.at("x").begin() + (row + 1) * n);
      for (const std::size_t at : stable_order(x, false)) order.push_back(static_cast<double>(at));
    }
    return PlanBuffers{{"order", order}};
  });
}

TEST(LowerSort, StableSortTakesDimAndDescendingAsKeywordsThroughAView) {
  // torch.sort(x.t(), dim=1, descending=True, stable=True)[0]: aten.sort.stable.
  const Case c = lower_case("sort_stable_transposed");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  ASSERT_EQ(topk_kernels(c.lowering.plan), 1);
  EXPECT_EQ(c.lowering.plan["kernels"][0]["largest"], true);
  const int64_t rows = 5, n = 6;
  check_semantics(c, {{"rows", rows}}, [&](const PlanBuffers& in) {
    std::vector<double> v;
    for (int64_t col = 0; col < n; ++col) {
      std::vector<double> line;
      for (int64_t r = 0; r < rows; ++r) line.push_back(in.at("x")[r * n + col]);
      for (const std::size_t at : stable_order(line, true)) v.push_back(line[at]);
    }
    return PlanBuffers{{"v", v}};
  });
}

}  // namespace
}  // namespace kernelarc
