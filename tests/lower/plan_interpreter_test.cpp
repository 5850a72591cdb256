// The plan interpreter as a library feature: it reports a malformed plan or an access outside a
// buffer as InputError, leaves unwritten elements NaN, and measures a plan's work.
#include "lower/plan_interpreter.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/error.h"

namespace kernelarc {
namespace {

using Json = OrderedJson;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Json shifted_copy_plan(const std::string& shift) {
  return Json::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "out", "kind": "output", "index": 0, "dtype": "bfloat16"}],
    "kernels": [{"kind": "pointwise", "domain": ["n"],
      "loads": {"a": {"buffer": "x", "offset": ")" +
                     shift + R"(", "strides": ["1"],
                      "coords": [["idx", 0]]}},
      "stores": [{"buffer": "out", "offset": "0", "strides": ["2"], "coords": [["idx", 0]],
                  "value": ["mul", ["load", "a"], ["f", 3.0]]}]}]})");
}

TEST(PlanInterpreter, StoresRoundToTheBufferDtypeAndUnwrittenElementsStayNaN) {
  const PlanBuffers out =
      run_plan(shifted_copy_plan("0"), {{"n", 2}}, {{"x", {1.0, 0.1}}}, {{"out", {4}}});
  ASSERT_EQ(out.at("out").size(), 4u);
  EXPECT_EQ(out.at("out")[0], 3.0);
  EXPECT_NE(out.at("out")[2], 0.3);  // 0.3 is not a bfloat16
  EXPECT_NEAR(out.at("out")[2], 0.3, 1e-2);
  EXPECT_TRUE(std::isnan(out.at("out")[1]));
  EXPECT_TRUE(std::isnan(out.at("out")[3]));
}

TEST(PlanInterpreter, AnAccessOutsideABufferIsAnInputErrorNamingIt) {
  try {
    run_plan(shifted_copy_plan("1"), {{"n", 2}}, {{"x", {1.0, 2.0}}}, {{"out", {4}}});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("\"x\""), std::string::npos) << error.what();
  }
}

TEST(PlanInterpreter, AnUnknownOpIsAnInputError) {
  Json plan = shifted_copy_plan("0");
  plan["kernels"][0]["stores"][0]["value"] = Json::parse(R"(["frobnicate", ["f", 1.0]])");
  EXPECT_THROW(run_plan(plan, {{"n", 2}}, {{"x", {1.0, 2.0}}}, {{"out", {4}}}), InputError);
}

TEST(PlanInterpreter, ReduceStagesAndWorkCount) {
  const Json plan = Json::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "out", "kind": "output", "index": 0, "dtype": "float32"},
                {"name": "arg", "kind": "output", "index": 1, "dtype": "int64"}],
    "kernels": [{"kind": "reduce", "domain": ["2"], "reduce": ["3"],
      "loads": {"a": {"buffer": "x", "offset": "0", "strides": ["3", "1"],
                      "coords": [["idx", 0], ["idx", 1]]}},
      "stages": [{"name": "m", "op": "max", "value": ["load", "a"]},
                 {"name": "i", "op": "argmax", "value": ["load", "a"]},
                 {"name": "s", "op": "sum", "value": ["exp", ["sub", ["load", "a"], ["stage", "m"]]]}],
      "stores": [{"buffer": "out", "offset": "0", "strides": ["3", "1"],
                  "coords": [["idx", 0], ["idx", 1]], "over": "full",
                  "value": ["div", ["exp", ["sub", ["load", "a"], ["stage", "m"]]], ["stage", "s"]]},
                 {"buffer": "arg", "offset": "0", "strides": ["1"], "coords": [["idx", 0]],
                  "over": "keep", "value": ["stage", "i"]}]}]})");
  const PlanBuffers out =
      run_plan(plan, {}, {{"x", {0, 1, 2, 5, 4, 3}}}, {{"out", {2, 3}}, {"arg", {2}}});
  const double total = std::exp(-2.0) + std::exp(-1.0) + 1;
  EXPECT_NEAR(out.at("out")[2], 1 / total, 1e-7);
  EXPECT_NEAR(out.at("out")[3], 1 / total, 1e-7);
  EXPECT_EQ(out.at("arg"), (std::vector<double>{2, 0}));
  EXPECT_EQ(plan_work(plan, {}), 2 * 3 * 4);
}

/// out = 10 * (row + 1) everywhere, then a scatter over `n` points that puts (accumulate: adds)
/// x[i] at out[index[i], column] for every column of 2.
Json scatter_plan(bool accumulate) {
  Json plan = Json::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "index", "kind": "input", "index": 1, "dtype": "int64"},
                {"name": "out", "kind": "output", "index": 0, "dtype": "float32"}],
    "kernels": [{"kind": "pointwise", "domain": ["3", "2"], "loads": {},
      "stores": [{"buffer": "out", "offset": "0", "strides": ["2", "1"],
                  "coords": [["idx", 0], ["idx", 1]],
                  "value": ["mul", ["f", 10], ["float", ["add", ["idx", 0], ["i", 1]]]]}]},
     {"kind": "scatter", "domain": ["n", "2"], "accumulate": true,
      "loads": {"row": {"buffer": "index", "offset": "0", "strides": ["1"], "coords": [["idx", 0]]},
                "v": {"buffer": "x", "offset": "0", "strides": ["1"], "coords": [["idx", 0]]}},
      "stores": [{"buffer": "out", "offset": "0", "strides": ["2", "1"],
                  "coords": [["load", "row"], ["idx", 1]], "value": ["load", "v"]}]}]})");
  plan["kernels"][1]["accumulate"] = accumulate;
  return plan;
}

TEST(PlanInterpreter, AnAccumulatingScatterAddsEveryDuplicate) {
  const PlanBuffers out =
      run_plan(scatter_plan(true), {{"n", 4}}, {{"x", {1, 2, 4, 8}}, {"index", {2, 0, 2, 2}}},
               {{"out", {3, 2}}});
  EXPECT_EQ(out.at("out"), (std::vector<double>{12, 12, 20, 20, 43, 43}));
}

TEST(PlanInterpreter, AWritingScatterKeepsTheLastDuplicateInDomainOrder) {
  const PlanBuffers out =
      run_plan(scatter_plan(false), {{"n", 4}}, {{"x", {1, 2, 4, 8}}, {"index", {2, 0, 2, 1}}},
               {{"out", {3, 2}}});
  EXPECT_EQ(out.at("out"), (std::vector<double>{2, 2, 8, 8, 4, 4}));
}

TEST(PlanInterpreter, AScatterIndexOutsideTheBufferIsAnInputError) {
  EXPECT_THROW(
      run_plan(scatter_plan(true), {{"n", 1}}, {{"x", {1}}, {"index", {3}}}, {{"out", {3, 2}}}),
      InputError);
}

/// For each of 2 rows of x [2, n], the k elements topk selects (largest or smallest first) as
/// values into v [2, k] and positions into at [2, k].
Json topk_plan(bool largest) {
  Json plan = Json::parse(R"({"version": 1,
    "buffers": [{"name": "x", "kind": "input", "index": 0, "dtype": "float32"},
                {"name": "v", "kind": "output", "index": 0, "dtype": "float32"},
                {"name": "at", "kind": "output", "index": 1, "dtype": "int64"}],
    "kernels": [{"kind": "topk", "domain": ["2"], "extent": "n", "k": "k", "largest": true,
      "loads": {"x": {"buffer": "x", "offset": "0", "strides": ["n", "1"],
                      "coords": [["idx", 0], ["idx", 1]]}},
      "value": ["load", "x"],
      "stores": [{"buffer": "v", "offset": "0", "strides": ["k", "1"],
                  "coords": [["idx", 0], ["idx", 1]], "value": ["topk_value"]},
                 {"buffer": "at", "offset": "0", "strides": ["k", "1"],
                  "coords": [["idx", 0], ["idx", 1]], "value": ["topk_index"]}]}]})");
  plan["kernels"][0]["largest"] = largest;
  return plan;
}

const std::vector<double> kTopkRows = {3, 1, 3, 5, -2, /* row 1 */ 0, kNaN, 4, kNaN, 4};

TEST(PlanInterpreter, TopkSelectsTheLargestInOrderTiesToTheLowerPositionNanAboveAll) {
  const PlanBuffers out = run_plan(topk_plan(true), {{"n", 5}, {"k", 3}}, {{"x", kTopkRows}},
                                   {{"v", {2, 3}}, {"at", {2, 3}}});
  EXPECT_EQ(out.at("at"), (std::vector<double>{3, 0, 2, 1, 3, 2}));
  EXPECT_EQ(out.at("v")[0], 5);
  EXPECT_EQ(out.at("v")[1], 3);
  EXPECT_TRUE(std::isnan(out.at("v")[3]) && std::isnan(out.at("v")[4]));
  EXPECT_EQ(out.at("v")[5], 4);
}

TEST(PlanInterpreter, TopkOfTheSmallestPutsNanLastAndAFullRowIsASort) {
  const PlanBuffers out = run_plan(topk_plan(false), {{"n", 5}, {"k", 5}}, {{"x", kTopkRows}},
                                   {{"v", {2, 5}}, {"at", {2, 5}}});
  EXPECT_EQ(out.at("at"), (std::vector<double>{4, 1, 0, 2, 3, 0, 2, 4, 1, 3}));
  EXPECT_EQ(plan_work(topk_plan(false), {{"n", 5}, {"k", 5}}), 2 * 5);
}

TEST(PlanInterpreter, ATopkOfMoreThanItsRowIsAnInputError) {
  EXPECT_THROW(run_plan(topk_plan(true), {{"n", 2}, {"k", 3}}, {{"x", {1, 2, 3, 4}}},
                        {{"v", {2, 3}}, {"at", {2, 3}}}),
               InputError);
}

}  // namespace
}  // namespace kernelarc
