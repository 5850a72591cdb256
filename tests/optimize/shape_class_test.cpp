#include <gtest/gtest.h>

#include <cmath>

#include "optimize/shape_class.h"

namespace kernelarc {
namespace {

Workload workload(int64_t batch_size) {
  Workload result;
  result.axes = {{"batch_size", batch_size}};
  return result;
}

TEST(ShapeClass, ConstAxesAsValuesVarAxesAsRangesExprAxesLeftOut) {
  Definition definition;
  definition.name = "rmsnorm_f32";
  definition.axes = {{"batch_size", AxisKind::Var, 0, ""},
                     {"hidden_size", AxisKind::Const, 4096, ""},
                     {"groups", AxisKind::Expr, 0, "hidden_size // 128"}};
  EXPECT_EQ(shape_class_of(definition, {workload(7), workload(16384), workload(1)}),
            "rmsnorm_f32: batch_size=1..16384 hidden_size=4096");
  EXPECT_EQ(shape_class_of(definition, {workload(7)}),
            "rmsnorm_f32: batch_size=7 hidden_size=4096");
}

TEST(ShapeClass, ParsesWhatItFormats) {
  const auto shape = parse_shape_class("rmsnorm_f32: batch_size=1..16384 hidden_size=4096");
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->problem, "rmsnorm_f32");
  ASSERT_EQ(shape->axes.size(), 2u);
  EXPECT_EQ(shape->axes[0].name, "batch_size");
  EXPECT_EQ(shape->axes[0].low, 1);
  EXPECT_EQ(shape->axes[0].high, 16384);
  EXPECT_EQ(shape->axes[1].low, 4096);
  EXPECT_EQ(shape->axes[1].high, 4096);
  EXPECT_EQ(format_shape_class(*shape), "rmsnorm_f32: batch_size=1..16384 hidden_size=4096");

  const auto bare = parse_shape_class("M=128 N=256..512");
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->problem.empty());
  EXPECT_EQ(format_shape_class(*bare), "M=128 N=256..512");
}

TEST(ShapeClass, OlderDescriptionsDoNotParse) {
  EXPECT_FALSE(parse_shape_class("rmsnorm_f32: all 6 workloads"));
  EXPECT_FALSE(parse_shape_class("rows>=4096 hidden=4096"));
  EXPECT_FALSE(parse_shape_class("rmsnorm_f32: batch_size=1 batch_size=2"));
  EXPECT_FALSE(parse_shape_class("rmsnorm_f32: batch_size=16..8"));
  EXPECT_FALSE(parse_shape_class("rmsnorm_f32: batch_size=-1"));
}

TEST(ShapeSimilarity, IdenticalIsOneAndTheOrderDoesNotMatter) {
  const std::string shape = "rmsnorm_f32: batch_size=1..16384 hidden_size=4096";
  EXPECT_EQ(shape_similarity(shape, shape), 1.0);
  EXPECT_EQ(shape_similarity("rmsnorm_f32: all 6 workloads", "rmsnorm_f32: all 6 workloads"), 1.0);
  const std::string other = "rmsnorm_f32: batch_size=1..1024 hidden_size=8192";
  EXPECT_EQ(shape_similarity(shape, other), shape_similarity(other, shape));
  EXPECT_GT(shape_similarity(shape, other), 0.0);
  EXPECT_LT(shape_similarity(shape, other), 1.0);
}

TEST(ShapeSimilarity, CloserSizesScoreHigher) {
  const std::string query = "rmsnorm_f32: batch_size=1..16384 hidden_size=4096";
  const double same = shape_similarity(query, "rmsnorm_f32: batch_size=1..16384 hidden_size=4096");
  const double twice = shape_similarity(query, "rmsnorm_f32: batch_size=1..16384 hidden_size=8192");
  const double half = shape_similarity(query, "rmsnorm_f32: batch_size=1..16384 hidden_size=2048");
  const double far = shape_similarity(query, "rmsnorm_f32: batch_size=1..16384 hidden_size=65536");
  EXPECT_GT(same, twice);
  EXPECT_DOUBLE_EQ(twice, half);  // sizes compare by ratio
  EXPECT_DOUBLE_EQ(twice, std::exp(-0.5));
  EXPECT_GT(twice, far);
  // A run over one row is far from one over up to 16384 rows.
  EXPECT_LT(shape_similarity(query, "rmsnorm_f32: batch_size=1 hidden_size=4096"), twice);
}

TEST(ShapeSimilarity, UnknownIsNeutral) {
  const std::string query = "rmsnorm_f32: batch_size=1..16384 hidden_size=4096";
  EXPECT_EQ(shape_similarity(query, "rmsnorm_f32: all 6 workloads"), kUnknownShapeSimilarity);
  EXPECT_EQ(shape_similarity("rmsnorm_f32: all 6 workloads", query), kUnknownShapeSimilarity);
  EXPECT_EQ(shape_similarity(query, "softmax: rows=4096"), kUnknownShapeSimilarity);
  // An axis only one side has halves the similarity at most, in proportion to its share.
  EXPECT_DOUBLE_EQ(shape_similarity("rmsnorm_f32: hidden_size=4096",
                                    "rmsnorm_f32: batch_size=7 hidden_size=4096"),
                   std::sqrt(kUnknownShapeSimilarity));
}

}  // namespace
}  // namespace kernelarc
