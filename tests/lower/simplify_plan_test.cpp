// simplify_plan: the integer expressions of a plan rewritten without changing a single output
// bit, and the divisions the lowering builds for views (FLUX RoPE) gone where the index ranges
// make them trivial.
#include "lower/simplify_plan.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "lower_case.h"

namespace kernelarc {
namespace {

using namespace lower_test;

struct Divisions {
  int floordiv = 0, mod = 0;
  int by_non_constant = 0;  ///< divisors that are not an ["i", c] literal
};

void count_divisions(const Json& json, Divisions& count) {
  if (json.is_array() && json.size() == 3 && (json[0] == "floordiv" || json[0] == "mod")) {
    ++(json[0] == "floordiv" ? count.floordiv : count.mod);
    if (!(json[2].is_array() && json[2][0] == "i")) ++count.by_non_constant;
  }
  if (json.is_array() || json.is_object()) {
    for (const auto& item : json) count_divisions(item, count);
  }
}

Divisions divisions(const Json& plan) {
  Divisions count;
  count_divisions(plan, count);
  return count;
}

/// Runs `plan` on inputs drawn from `seed` (the same inputs for the same seed and sizes).
PlanBuffers run_on_random_inputs(const Definition& definition, const Json& plan,
                                 const AxisValues& vars, unsigned seed) {
  Workload workload;
  workload.axes = vars;
  const AxisValues axes = resolve_axes(definition, workload);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  PlanBuffers inputs;
  for (const auto& spec : definition.inputs) {
    int64_t elements = 1;
    for (const int64_t extent : resolve_shape(spec, axes)) elements *= extent;
    auto& data = inputs[spec.name];
    for (int64_t i = 0; i < elements; ++i) {
      const double drawn = spec.shape ? uniform(rng) : 0.01 + std::fabs(uniform(rng));
      data.push_back(dtype_is_floating(spec.dtype) ? rounded(spec.dtype, drawn)
                                                   : static_cast<double>(rng() % 2));
    }
  }
  std::map<std::string, std::vector<int64_t>> output_shapes;
  for (const auto& spec : definition.outputs) {
    output_shapes[spec.name] = resolve_shape(spec, axes);
  }
  return run_plan(plan, axes, inputs, output_shapes);
}

/// Every output of `a` and `b` equal bit for bit (NaN where the other has NaN).
void expect_identical_outputs(const Definition& definition, const PlanBuffers& a,
                              const PlanBuffers& b, const std::string& what) {
  for (const auto& spec : definition.outputs) {
    const auto& x = a.at(spec.name);
    const auto& y = b.at(spec.name);
    ASSERT_EQ(x.size(), y.size()) << what << " " << spec.name;
    int64_t differing = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bool same =
          (std::isnan(x[i]) && std::isnan(y[i])) || std::memcmp(&x[i], &y[i], sizeof(double)) == 0;
      differing += !same;
    }
    EXPECT_EQ(differing, 0) << what << ": output " << spec.name << " differs in " << differing
                            << " of " << x.size() << " elements";
  }
}

Case unsimplified_case(const std::string& name) {
  Case c = lower_case(name);
  c.lowering = lower_to_plan(c.graph, c.definition, /*simplify_indices=*/false);
  return c;
}

TEST(SimplifyPlan, FluxRopeCoordsAreAffineInTheIndex) {
  const Case c = unsimplified_case("flux_rope");
  ASSERT_TRUE(c.lowering.ok) << c.lowering.reason;
  const Json& raw = c.lowering.plan;
  const Json simplified = simplify_plan(raw, c.definition);
  // The lowering rebuilds the linear position of each view and splits it by seq_len*3072,
  // 3072, 128, 24, 64 and 2 (30 floordiv and mod nodes when this test was written).
  // What stays is the pairing: 2 * (i3 // 2) for the even element of a pair (+ 1 for the odd
  // one) in the six loads, and the parity i3 % 2 choosing the rotation's sign.
  const Divisions after = divisions(simplified);
  EXPECT_EQ(after.by_non_constant, 0);
  EXPECT_EQ(after.floordiv, 6) << simplified.dump();
  EXPECT_EQ(after.mod, 1) << simplified.dump();
  ASSERT_EQ(simplified["kernels"].size(), 1u);
  const Json& kernel = simplified["kernels"][0];
  const Json even = Json::parse(R"(["mul", ["i", 2], ["floordiv", ["idx", 3], ["i", 2]]])");
  const Json odd = Json::array({"add", even, Json::array({"i", 1})});
  for (const auto& [name, load] : kernel["loads"].items()) {
    const Json& coords = load["coords"];
    ASSERT_EQ(coords.size(), 4u) << name;
    if (load["buffer"] == "query_or_key") {
      for (int d = 0; d < 3; ++d)
        EXPECT_EQ(coords[d], Json::parse(fmt::format(R"(["idx", {}])", d))) << name;
    } else {  // freqs, viewed as [1, seq_len, 1, head_dim]
      EXPECT_EQ(coords[0], Json::parse(R"(["i", 0])")) << name;
      EXPECT_EQ(coords[1], Json::parse(R"(["idx", 1])")) << name;
      EXPECT_EQ(coords[2], Json::parse(R"(["i", 0])")) << name;
    }
    EXPECT_TRUE(coords[3] == even || coords[3] == odd) << name << ": " << coords[3].dump();
  }
  // The lowering runs the pass itself.
  EXPECT_EQ(lower_to_plan(c.graph, c.definition).plan, simplified);
  const AxisValues vars = {{"batch_size", 2}, {"seq_len", 3}};
  expect_identical_outputs(c.definition, run_on_random_inputs(c.definition, raw, vars, 11),
                           run_on_random_inputs(c.definition, simplified, vars, 11), "flux_rope");
}

TEST(SimplifyPlan, EveryLoweredCaseComputesTheSameOutputsBitForBit) {
  const std::filesystem::path root = std::string(KERNELARC_SOURCE_DIR) + "/tests/data/lower";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (!std::filesystem::exists(entry.path() / "graph.json")) continue;
    const std::string name = entry.path().filename().string();
    const Case c = unsimplified_case(name);
    if (!c.lowering.ok) continue;  // a case of a refused graph
    const Json simplified = simplify_plan(c.lowering.plan, c.definition);
    const Divisions before = divisions(c.lowering.plan), after = divisions(simplified);
    EXPECT_LE(after.floordiv + after.mod, before.floordiv + before.mod) << name;
    EXPECT_LE(after.by_non_constant, before.by_non_constant) << name;
    EXPECT_EQ(simplify_plan(simplified, c.definition), simplified) << name << ": not a fixed point";
    for (const int64_t size : {1, 2, 3, 5}) {
      AxisValues vars;
      for (const auto& axis : c.definition.axes) {
        if (axis.kind == AxisKind::Var) vars[axis.name] = size;
      }
      for (const unsigned seed : {1u, 2u}) {
        PlanBuffers raw;
        try {
          raw = run_on_random_inputs(c.definition, c.lowering.plan, vars, seed);
        } catch (const InputError&) {
          // A scatter's index out of range (1 into a dim of size 1): both plans refuse it.
          EXPECT_THROW(run_on_random_inputs(c.definition, simplified, vars, seed), InputError)
              << name << " at size " << size;
          continue;
        }
        expect_identical_outputs(c.definition, raw,
                                 run_on_random_inputs(c.definition, simplified, vars, seed),
                                 fmt::format("{} at size {}", name, size));
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(SimplifyPlan, ALoadOnlyADecidedBranchReadLeavesTheKernel) {
  // cat([a, b]) over a domain that only ever reaches a: b's load (at a negative position) goes.
  Definition definition;
  const Json plan = Json::parse(R"({"version": 1,
    "buffers": [{"name": "a", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "b", "kind": "input", "index": 1, "dtype": "float32"},
                {"name": "out", "kind": "output", "index": 0, "dtype": "float32"}],
    "kernels": [{"kind": "pointwise", "domain": ["4"],
      "loads": {"a0": {"buffer": "a", "offset": "0", "strides": ["1"], "coords": [["idx", 0]]},
                "b1": {"buffer": "b", "offset": "0", "strides": ["1"],
                       "coords": [["sub", ["idx", 0], ["i", 4]]]}},
      "stores": [{"buffer": "out", "offset": "0", "strides": ["1"], "coords": [["idx", 0]],
                  "value": ["where", ["lt", ["idx", 0], ["i", 4]], ["load", "a0"],
                            ["load", "b1"]]}]}]})");
  const Json simplified = simplify_plan(plan, definition);
  const Json& kernel = simplified["kernels"][0];
  EXPECT_EQ(kernel["loads"].size(), 1u);
  EXPECT_TRUE(kernel["loads"].contains("a0"));
  EXPECT_EQ(kernel["stores"][0]["value"], Json::parse(R"(["load", "a0"])"));
  const PlanBuffers inputs = {{"a", {1, 2, 3, 4}}, {"b", {5, 6}}};
  const std::map<std::string, std::vector<int64_t>> shapes = {{"out", {4}}};
  EXPECT_EQ(run_plan(simplified, {}, inputs, shapes).at("out"),
            run_plan(plan, {}, inputs, shapes).at("out"));
}

TEST(SimplifyPlan, AFlatPositionSplitAndPutBackTogetherIsOneCoord) {
  // A store through a 3-d reshape of flat position p (a convolution's output positions): p // 12
  // at stride 12, p // 4 % 3 at stride 4, p % 4 at stride 1 address exactly p at stride 1. A
  // pair whose strides do not nest (the last load) keeps its coords.
  Definition definition;
  const Json plan = Json::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "out", "kind": "output", "index": 0, "dtype": "float32"}],
    "kernels": [{"kind": "pointwise", "domain": ["2", "24"],
      "loads": {"x0": {"buffer": "x", "offset": "0", "strides": ["24", "5", "1"],
                       "coords": [["idx", 0], ["floordiv", ["idx", 1], ["i", 4]],
                                  ["mod", ["idx", 1], ["i", 4]]]}},
      "stores": [{"buffer": "out", "offset": "0", "strides": ["24", "12", "4", "1"],
                  "coords": [["idx", 0], ["floordiv", ["idx", 1], ["i", 12]],
                             ["mod", ["floordiv", ["idx", 1], ["i", 4]], ["i", 3]],
                             ["mod", ["idx", 1], ["i", 4]]],
                  "value": ["load", "x0"]}]}]})");
  const Json simplified = simplify_plan(plan, definition);
  const Json& store = simplified["kernels"][0]["stores"][0];
  EXPECT_EQ(store["coords"], Json::parse(R"([["idx", 0], ["idx", 1]])"));
  EXPECT_EQ(store["strides"], Json::parse(R"(["24", "1"])"));
  EXPECT_EQ(simplified["kernels"][0]["loads"]["x0"]["coords"].size(), 3u);
  PlanBuffers inputs = {{"x", std::vector<double>(64)}};
  for (std::size_t i = 0; i < 64; ++i) inputs["x"][i] = static_cast<double>(i);
  const std::map<std::string, std::vector<int64_t>> shapes = {{"out", {48}}};
  EXPECT_EQ(run_plan(simplified, {}, inputs, shapes).at("out"),
            run_plan(plan, {}, inputs, shapes).at("out"));
}

// Single expressions: a pointwise kernel over `domain` storing ["float", expr] into a float64
// output, simplified, and the two plans run against each other.
class SimplifyExpr : public ::testing::Test {
 protected:
  SimplifyExpr() {
    definition_.axes = {{"n", AxisKind::Var, 0, ""}, {"c", AxisKind::Const, 6, ""}};
  }

  /// The simplified expression; checks it equals `expr` at every point of `domain` (n = 5).
  Json simplified(const Json& expr, const std::vector<std::string>& domain) {
    Json store = {{"buffer", "out"},
                  {"offset", "0"},
                  {"strides", Json::array()},
                  {"coords", Json::array()},
                  {"value", Json::array({"float", expr})}};
    Json domain_json = Json::array();
    std::string stride = "1";
    for (std::size_t d = domain.size(); d-- > 0;) {
      store["strides"].insert(store["strides"].begin(), stride);
      store["coords"].insert(store["coords"].begin(), Json::array({"idx", d}));
      stride = "(" + stride + ")*(" + domain[d] + ")";
    }
    for (const auto& size : domain) domain_json.push_back(size);
    const Json plan = {
        {"version", 1},
        {"buffers",
         Json::array({{{"name", "out"}, {"kind", "output"}, {"index", 0}, {"dtype", "float64"}}})},
        {"kernels", Json::array({{{"kind", "pointwise"},
                                  {"domain", domain_json},
                                  {"loads", Json::object()},
                                  {"stores", Json::array({store})}}})}};
    const Json result = simplify_plan(plan, definition_);
    const AxisValues axes = {{"n", 5}, {"c", 6}};
    int64_t elements = 1;
    for (const auto& size : domain) elements *= evaluate_expr(size, axes);
    const std::map<std::string, std::vector<int64_t>> shapes = {{"out", {elements}}};
    const auto expected = run_plan(plan, axes, {}, shapes).at("out");
    const auto got = run_plan(result, axes, {}, shapes).at("out");
    EXPECT_EQ(got, expected) << expr.dump() << " -> " << result.dump();
    const Json value = result["kernels"][0]["stores"][0]["value"];
    return value[0] == "float" ? value[1] : value;
  }

  Definition definition_;
};

TEST_F(SimplifyExpr, FloordivAndModByAMonomialOfAVarAxis) {
  const Json position = Json::parse(
      R"(["add", ["add", ["mul", ["size", "n*6"], ["idx", 0]], ["mul", ["i", 6], ["idx", 1]]],
                 ["idx", 2]])");
  EXPECT_EQ(simplified(Json::array({"floordiv", position, Json::parse(R"(["size", "6"])")}),
                       {"3", "n", "c"}),
            Json::parse(R"(["add", ["mul", ["size", "n"], ["idx", 0]], ["idx", 1]])"));
  EXPECT_EQ(simplified(Json::array({"floordiv", position, Json::parse(R"(["size", "n*6"])")}),
                       {"3", "n", "c"}),
            Json::parse(R"(["idx", 0])"));
  EXPECT_EQ(simplified(
                Json::array({"mod", Json::array({"floordiv", position, Json::parse(R"(["i", 6])")}),
                             Json::parse(R"(["size", "n"])")}),
                {"3", "n", "c"}),
            Json::parse(R"(["idx", 1])"));
  EXPECT_EQ(simplified(Json::array({"mod", position, Json::parse(R"(["i", 2])")}), {"3", "n", "c"}),
            Json::parse(R"(["mod", ["idx", 2], ["i", 2]])"));
}

TEST_F(SimplifyExpr, ADividendThatMayBeNegativeKeepsItsDivision) {
  // i0 - 1 is -1 at i0 = 0, where (i0 - 1) // 2 is -1, not 0.
  EXPECT_EQ(
      simplified(Json::parse(R"(["floordiv", ["sub", ["idx", 0], ["i", 1]], ["i", 2]])"), {"4"}),
      Json::parse(R"(["floordiv", ["sub", ["idx", 0], ["i", 1]], ["i", 2]])"));
  // The exact part still leaves: (4*i0 + i1 - 2) // 4 == i0 + (i1 - 2) // 4.
  EXPECT_EQ(simplified(Json::parse(
                           R"(["floordiv", ["sub", ["add", ["mul", ["i", 4], ["idx", 0]],
                                                   ["idx", 1]], ["i", 2]], ["i", 4]])"),
                       {"3", "4"}),
            Json::parse(R"(["add", ["idx", 0], ["floordiv", ["sub", ["idx", 1], ["i", 2]],
                                                        ["i", 4]]])"));
  // A negative divisor or one that is not a monomial of the axes is left alone.
  const Json negative = Json::parse(R"(["mod", ["idx", 0], ["i", -3]])");
  EXPECT_EQ(simplified(negative, {"5"}), negative);
  const Json by_index = Json::parse(R"(["floordiv", ["i", 12], ["add", ["idx", 0], ["i", 1]]])");
  EXPECT_EQ(simplified(by_index, {"5"}), by_index);
}

TEST_F(SimplifyExpr, NestedDivisionsAndCommonFactors) {
  EXPECT_EQ(simplified(Json::parse(R"(["floordiv", ["floordiv", ["idx", 0], ["i", 2]], ["i", 3]])"),
                       {"24"}),
            Json::parse(R"(["floordiv", ["idx", 0], ["i", 6]])"));
  EXPECT_EQ(simplified(Json::parse(R"(["mod", ["mod", ["idx", 0], ["i", 6]], ["i", 3]])"), {"24"}),
            Json::parse(R"(["mod", ["idx", 0], ["i", 3]])"));
  // (2*i0) % 6 == 2 * (i0 % 3)
  EXPECT_EQ(simplified(Json::parse(R"(["mod", ["mul", ["i", 2], ["idx", 0]], ["i", 6]])"), {"24"}),
            Json::parse(R"(["mul", ["i", 2], ["mod", ["idx", 0], ["i", 3]]])"));
  // (2 * (i0 // 2)) // 128 with i0 < 128: the inner quotient is at most 63.
  EXPECT_EQ(simplified(Json::parse(R"(["floordiv", ["add", ["mul", ["i", 2], ["floordiv",
                                       ["idx", 0], ["i", 2]]], ["i", 1]], ["i", 128]])"),
                       {"128"}),
            Json::parse(R"(["i", 0])"));
}

TEST_F(SimplifyExpr, ConstantsWhereAndComparisonsFold) {
  EXPECT_EQ(
      simplified(
          Json::parse(R"(["add", ["mul", ["i", 1], ["idx", 0]], ["sub", ["i", 3], ["i", 3]]])"),
          {"4"}),
      Json::parse(R"(["idx", 0])"));
  EXPECT_EQ(
      simplified(Json::parse(R"(["where", ["lt", ["idx", 0], ["i", 2]], ["idx", 1], ["idx", 1]])"),
                 {"4", "3"}),
      Json::parse(R"(["idx", 1])"));
  // i0 < n holds over a domain of n; i0 >= 4 never holds over a domain of 4.
  EXPECT_EQ(simplified(Json::parse(
                           R"(["where", ["lt", ["idx", 0], ["size", "n"]], ["idx", 0], ["i", 7]])"),
                       {"n"}),
            Json::parse(R"(["idx", 0])"));
  EXPECT_EQ(simplified(Json::parse(R"(["ge", ["idx", 0], ["i", 4]])"), {"4"}),
            Json::parse(R"(["i", 0])"));
  EXPECT_EQ(simplified(Json::parse(R"(["eq", ["idx", 0], ["i", 2]])"), {"4"}),
            Json::parse(R"(["eq", ["idx", 0], ["i", 2]])"));
}

TEST_F(SimplifyExpr, FloatArithmeticIsLeftAsWritten) {
  // Only the integer operand of float() is rewritten; the float sum keeps its order.
  const Json expr = Json::parse(
      R"(["add", ["mul", ["float", ["idx", 0]], ["f", 0.1]], ["float", ["mul", ["i", 0], ["idx", 0]]]])");
  EXPECT_EQ(
      simplified(expr, {"4"}),
      Json::parse(R"(["add", ["mul", ["float", ["idx", 0]], ["f", 0.1]], ["float", ["i", 0]]])"));
}

}  // namespace
}  // namespace kernelarc
