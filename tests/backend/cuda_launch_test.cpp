// Launch specs and plans of device-only kernels: parsing, checking against a definition, and
// evaluation from the tensors of a call. No GPU and no compiler needed.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_launch.h"
#include "core/error.h"

namespace kernelarc {
namespace {

Definition rms_definition() {
  Definition definition;
  definition.name = "rms";
  definition.axes = {Axis{"batch", AxisKind::Var, 0, ""}, Axis{"hidden", AxisKind::Var, 0, ""},
                     Axis{"half", AxisKind::Expr, 0, "hidden // 2"},
                     Axis{"four", AxisKind::Const, 4, ""}};
  definition.inputs = {TensorSpec{"x", std::vector<std::string>{"batch", "hidden"}},
                       TensorSpec{"w", std::vector<std::string>{"hidden"}},
                       TensorSpec{"eps", std::nullopt}};
  definition.outputs = {TensorSpec{"y", std::vector<std::string>{"batch", "hidden"}}};
  return definition;
}

OrderedJson rms_ext() {
  return OrderedJson::parse(R"({
    "launch": {"kernel": "rms<128>", "grid": ["batch", "half // BLOCK"], "block": ["BLOCK"],
               "shared_bytes": "BLOCK * four", "cluster": [2]},
    "knobs": {"BLOCK": 128}})");
}

ka_tensor tensor(std::initializer_list<int64_t> shape) {
  ka_tensor t{};
  t.ndim = static_cast<int>(shape.size());
  int d = 0;
  for (int64_t extent : shape) t.shape[d++] = extent;
  return t;
}

LaunchPlan rms_plan() {
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  EXPECT_EQ(parse_launch_spec(rms_ext(), "rms_entry", spec, knobs), std::nullopt);
  LaunchPlan plan;
  EXPECT_EQ(make_launch_plan(spec, knobs, rms_definition(), plan), std::nullopt);
  return plan;
}

TEST(CudaLaunch, ParsesSpecWithDefaultsAndKnobs) {
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  OrderedJson ext = OrderedJson::parse(R"({"launch": {"grid": [4, "n"], "block": [256]}})");
  ASSERT_EQ(parse_launch_spec(ext, "entry", spec, knobs), std::nullopt);
  EXPECT_EQ(spec.kernel, "entry");
  EXPECT_EQ(spec.grid, (std::array<std::string, 3>{"4", "n", "1"}));
  EXPECT_EQ(spec.block, (std::array<std::string, 3>{"256", "1", "1"}));
  EXPECT_EQ(spec.shared_bytes, "0");
  EXPECT_FALSE(spec.cluster.has_value());
  EXPECT_TRUE(knobs.empty());

  ASSERT_EQ(parse_launch_spec(rms_ext(), "entry", spec, knobs), std::nullopt);
  EXPECT_EQ(spec.kernel, "rms<128>");
  EXPECT_EQ(knobs, (std::map<std::string, int64_t>{{"BLOCK", 128}}));
  EXPECT_EQ(knob_defines(knobs), std::vector<std::string>{"-DBLOCK=128"});
}

TEST(CudaLaunch, RejectsMalformedSpecs) {
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  auto error_of = [&](const char* text) {
    return parse_launch_spec(OrderedJson::parse(text), "entry", spec, knobs).value_or("");
  };
  EXPECT_EQ(error_of(R"({"launch": {"block": [1]}})"),
            "kernelarc.launch.grid: missing required field");
  EXPECT_NE(error_of(R"({"launch": {"grid": [1, 1, 1, 1], "block": [1]}})").find("1 to 3"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"launch": {"grid": [-1], "block": [1]}})").find("launch.grid[0]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"launch": {"grid": [1], "block": [1]}, "knobs": {"B": 1.5}})")
                .find("kernelarc.knobs.B: expected an integer"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"launch": {"grid": [1], "block": [1]}, "knobs": {"1B": 1}})").find("identifier"),
      std::string::npos);
}

TEST(CudaLaunch, PlanRejectsUnknownNamesAndUnreachableAxes) {
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  LaunchPlan plan;
  ASSERT_EQ(parse_launch_spec(OrderedJson::parse(R"({"launch": {"grid": ["batch * heads"],
                                                     "block": [32]}})"),
                              "k", spec, knobs),
            std::nullopt);
  EXPECT_NE(make_launch_plan(spec, knobs, rms_definition(), plan).value_or("").find("'heads'"),
            std::string::npos);

  knobs = {{"batch", 2}};
  spec.grid = {"1", "1", "1"};
  EXPECT_NE(make_launch_plan(spec, knobs, rms_definition(), plan).value_or("").find("axis"),
            std::string::npos);

  Definition hidden_axis = rms_definition();
  hidden_axis.axes.push_back(Axis{"unused", AxisKind::Var, 0, ""});
  EXPECT_NE(make_launch_plan(spec, {}, hidden_axis, plan).value_or("").find("'unused'"),
            std::string::npos);
}

TEST(CudaLaunch, PlanRoundTripsThroughJson) {
  LaunchPlan plan = rms_plan();
  plan.cubin_file = "kernel.cubin";
  plan.symbol = "_Z3rmsILi128EEvv";
  const LaunchPlan back = LaunchPlan::from_json(plan.to_json(), "plan.json");
  EXPECT_EQ(back.to_json(), plan.to_json());
  EXPECT_EQ(back.axes.size(), 4u);
  EXPECT_EQ(back.axes[2].expression, "hidden // 2");
  EXPECT_FALSE(back.input_shapes[2].has_value());
  EXPECT_THROW(LaunchPlan::from_json({{"format", "other"}}, "plan.json"), InputError);
  EXPECT_TRUE(is_launch_plan("/cache/cuda/abc/kernel.launch.json"));
  EXPECT_FALSE(is_launch_plan("/cache/cuda/abc/lib.so"));
}

TEST(CudaLaunch, ResolvesAxesAndExpressionsFromShapes) {
  LaunchResolver resolver(rms_plan());
  ka_tensor inputs[] = {tensor({3, 1024}), tensor({1024}), tensor({})};
  ka_tensor outputs[] = {tensor({3, 1024})};
  LaunchConfig config;
  ASSERT_EQ(resolver.resolve(inputs, 3, outputs, 1, config), std::nullopt);
  EXPECT_EQ(config.grid, (std::array<int64_t, 3>{3, 4, 1}));
  EXPECT_EQ(config.block, (std::array<int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(config.shared_bytes, 512);
  ASSERT_TRUE(config.cluster.has_value());
  EXPECT_EQ(*config.cluster, (std::array<int64_t, 3>{2, 1, 1}));
  // Definition order: batch, hidden, half, four.
  EXPECT_EQ(config.axis_values, (std::vector<int64_t>{3, 1024, 512, 4}));

  // A new shape is evaluated afresh, not served from the cached launch.
  inputs[0] = tensor({5, 2048});
  inputs[1] = tensor({2048});
  outputs[0] = tensor({5, 2048});
  ASSERT_EQ(resolver.resolve(inputs, 3, outputs, 1, config), std::nullopt);
  EXPECT_EQ(config.grid, (std::array<int64_t, 3>{5, 8, 1}));
  EXPECT_EQ(config.axis_values, (std::vector<int64_t>{5, 2048, 1024, 4}));
}

TEST(CudaLaunch, ResolveReportsMismatchedTensors) {
  LaunchResolver resolver(rms_plan());
  LaunchConfig config;
  ka_tensor inputs[] = {tensor({3, 1024}), tensor({512}), tensor({})};
  ka_tensor outputs[] = {tensor({3, 1024})};
  EXPECT_NE(resolver.resolve(inputs, 3, outputs, 1, config).value_or("").find("'hidden'"),
            std::string::npos);
  EXPECT_NE(resolver.resolve(inputs, 2, outputs, 1, config).value_or("").find("3 inputs"),
            std::string::npos);
  ka_tensor flat[] = {tensor({3072}), tensor({1024}), tensor({})};
  EXPECT_NE(resolver.resolve(flat, 3, outputs, 1, config).value_or("").find("dimensions"),
            std::string::npos);
  // hidden = 64 makes half // BLOCK zero: no grid may be empty.
  ka_tensor small[] = {tensor({3, 64}), tensor({64}), tensor({})};
  ka_tensor small_out[] = {tensor({3, 64})};
  EXPECT_NE(resolver.resolve(small, 3, small_out, 1, config).value_or("").find("grid[1]"),
            std::string::npos);
}

}  // namespace
}  // namespace kernelarc
