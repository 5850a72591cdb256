// The per-shape dispatch plan: a point replaces the top candidate at a shape only when its whole
// interval lies below the top candidate's there, and its variant holds at exactly that shape.
#include <gtest/gtest.h>

#include "optimize/shape_dispatch.h"

namespace kernelarc {
namespace {

Workload workload(const std::string& uuid, int64_t batch, int64_t hidden) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"batch_size", batch}, {"hidden_size", hidden}};
  return w;
}

Measurement measured(std::map<std::string, std::array<double, 3>> times) {
  Measurement m;
  m.passed = true;
  for (const auto& [uuid, t] : times) m.times[uuid] = {{t[1], t[0], t[2]}};
  return m;
}

TEST(ShapeDispatch, APointReplacesTheTopOnlyBeyondBothIntervals) {
  const std::vector<Workload> workloads{workload("small", 1, 4096), workload("large", 1025, 4096),
                                        workload("odd", 33, 3)};
  const Measurement top = measured(
      {{"small", {0.95, 1.0, 1.05}}, {"large", {9.9, 10.0, 10.1}}, {"odd", {0.5, 0.51, 0.52}}});
  // Faster at "small" beyond noise, and at "odd" only within it.
  const Measurement a = measured(
      {{"small", {0.5, 0.55, 0.6}}, {"large", {12, 12.5, 13}}, {"odd", {0.48, 0.50, 0.51}}});
  // Fastest at "large", also beyond noise; at "small" faster than the top but slower than a.
  const Measurement b =
      measured({{"small", {0.8, 0.85, 0.9}}, {"large", {8.0, 8.1, 8.2}}, {"odd", {0.6, 0.6, 0.6}}});
  Measurement failed = measured({{"small", {0.1, 0.1, 0.1}}});
  failed.passed = false;
  const DispatchPlan plan =
      plan_shape_dispatch(workloads, {1, &top}, {{1, &top}, {2, &a}, {3, &b}, {4, &failed}});
  ASSERT_EQ(plan.choices.size(), 2u);
  EXPECT_EQ(plan.choices[0].workload->uuid, "small");
  EXPECT_EQ(plan.choices[0].candidate_id, 2);
  EXPECT_EQ(plan.choices[1].workload->uuid, "large");
  EXPECT_EQ(plan.choices[1].candidate_id, 3);
  EXPECT_EQ(dispatch_plan_text(plan),
            "batch_size=1 hidden_size=4096: #2 0.5500 ms instead of 1.0000 ms; "
            "batch_size=1025 hidden_size=4096: #3 8.1000 ms instead of 10.0000 ms");

  // One variant per chosen candidate, its condition the shapes it serves.
  const auto variants = dispatch_variants(plan, [](int64_t id) {
    Solution solution;
    solution.ext = {{"knobs", {{"K", id}}}, {"template", {{"point", "K=" + std::to_string(id)}}}};
    return solution;
  });
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].when, "batch_size == 1 and hidden_size == 4096");
  EXPECT_EQ(variants[0].knobs["K"], 2);
  EXPECT_EQ(variants[0].point, "K=2");
  EXPECT_EQ(variants[1].when, "batch_size == 1025 and hidden_size == 4096");
}

TEST(ShapeDispatch, OnePointServingSeveralShapesIsOneVariant) {
  const std::vector<Workload> workloads{workload("x", 1, 8), workload("y", 2, 8)};
  const Measurement top = measured({{"x", {2, 2, 2}}, {"y", {2, 2, 2}}});
  const Measurement a = measured({{"x", {1, 1, 1}}, {"y", {1, 1, 1}}});
  const DispatchPlan plan = plan_shape_dispatch(workloads, {1, &top}, {{2, &a}});
  const auto variants = dispatch_variants(plan, [](int64_t) {
    Solution solution;
    solution.ext = {{"knobs", {{"K", 7}}}};
    return solution;
  });
  ASSERT_EQ(variants.size(), 1u);
  EXPECT_EQ(variants[0].when,
            "(batch_size == 1 and hidden_size == 8) or (batch_size == 2 and hidden_size == 8)");
  EXPECT_EQ(evaluate_expr(variants[0].when, {{"batch_size", 2}, {"hidden_size", 8}}), 1);
  EXPECT_EQ(evaluate_expr(variants[0].when, {{"batch_size", 3}, {"hidden_size", 8}}), 0);
  EXPECT_TRUE(variants[0].point.empty());
}

TEST(ShapeDispatch, ATopCandidateBestEverywhereNeedsNoDispatch) {
  const std::vector<Workload> workloads{workload("x", 1, 8)};
  const Measurement top = measured({{"x", {1, 1, 1}}});
  const Measurement a = measured({{"x", {0.9, 1.0, 1.1}}});
  EXPECT_TRUE(plan_shape_dispatch(workloads, {1, &top}, {{2, &a}}).choices.empty());
}

}  // namespace
}  // namespace kernelarc
