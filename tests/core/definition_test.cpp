#include <gtest/gtest.h>

#include "core/problem.h"
#include "test_support.h"

namespace kernelarc {
namespace {

using testing::fixture;
using testing::input_error_of;
using testing::TempDir;

TEST(Definition, ParsesAllFields) {
  const Definition def = load_definition(fixture("malformed/workload/definition.json"));
  EXPECT_EQ(def.name, "gqa_toy");
  EXPECT_EQ(def.op_type, "toy");
  ASSERT_EQ(def.axes.size(), 5u);
  EXPECT_EQ(def.axes[0].name, "batch_size");  // file order kept
  EXPECT_EQ(def.axes[0].kind, AxisKind::Var);
  EXPECT_EQ(def.axes[2].kind, AxisKind::Const);
  EXPECT_EQ(def.axes[2].value, 8);
  EXPECT_EQ(def.axes[3].kind, AxisKind::Expr);
  EXPECT_EQ(def.axes[3].expression, "H_qo // H_kv");
  EXPECT_EQ(def.find_axis("head_dim")->value, 16);
  EXPECT_EQ(def.find_axis("nope"), nullptr);
  EXPECT_EQ(def.constraints, (std::vector<std::string>{"H_qo == H_kv * H_r", "0 < H_r <= 8"}));

  ASSERT_EQ(def.inputs.size(), 3u);
  EXPECT_EQ(def.inputs[0].name, "q");
  EXPECT_EQ(def.inputs[1].name, "k");
  EXPECT_EQ(def.inputs[0].dtype, DType::BFloat16);
  EXPECT_EQ(*def.inputs[0].shape, (std::vector<std::string>{"batch_size", "H_qo", "head_dim"}));
  EXPECT_TRUE(def.inputs[2].is_scalar());
  EXPECT_EQ(def.inputs[2].description, "softmax scale");
  ASSERT_EQ(def.outputs.size(), 1u);
  EXPECT_EQ(def.outputs[0].name, "out");
  EXPECT_EQ(def.custom_inputs_entrypoint, "make_inputs");
  EXPECT_EQ(def.ext.op_family, "toy");
  EXPECT_EQ(def.ext.flops, "2 * batch_size * H_qo * head_dim");
  EXPECT_TRUE(def.ext.native_reference.empty());
  EXPECT_EQ(def.raw["name"], "gqa_toy");
  EXPECT_EQ(def.raw["inputs"].begin().key(), "q");
  EXPECT_EQ(def.path, fixture("malformed/workload/definition.json"));
}

TEST(Definition, AcceptsZeroDimTensorsAndSimpleReferences) {
  const OrderedJson json = OrderedJson::parse(R"({
    "name": "scale", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "s": {"shape": [], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "class A:\n    def run(self):\n        pass\n\ndef run (x, s, /):\n    return x * s\n",
    "tags": ["ignored"], "hf_id": "ignored"
  })");
  const Definition def = parse_definition(json, "inline.json");
  ASSERT_EQ(def.inputs.size(), 2u);
  ASSERT_TRUE(def.inputs[1].shape.has_value());
  EXPECT_TRUE(def.inputs[1].shape->empty());
  EXPECT_FALSE(def.inputs[1].is_scalar());
  EXPECT_TRUE(def.ext.op_family.empty());
}

struct BadDefinition {
  const char* file;
  const char* field;
  const char* problem;
};

class MalformedDefinition : public ::testing::TestWithParam<BadDefinition> {};

TEST_P(MalformedDefinition, NamesFileFieldAndProblem) {
  const BadDefinition& bad = GetParam();
  const auto path = fixture(std::string("malformed/definition/") + bad.file);
  const std::string message = input_error_of([&] { load_definition(path); });
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(std::string(": ") + bad.field + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(bad.problem), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, MalformedDefinition,
    ::testing::Values(
        BadDefinition{"missing_name.json", "name", "missing required field"},
        BadDefinition{"axes_wrong_type.json", "axes", "expected object, got array"},
        BadDefinition{"unknown_dtype.json", "inputs.weight.dtype",
                      "expected one of float64, float32, float16, bfloat16, float8_e4m3fn, "
                      "float8_e5m2, float4_e2m1, float4_e2m1fn_x2, int8, int16, int32, int64, "
                      "uint8, bool, got \"f32\""},
        BadDefinition{"unknown_axis_in_shape.json", "inputs.x.shape[1]",
                      "unknown axis \"hiden_size\""},
        BadDefinition{"expr_cycle.json", "axes.a.expression", "cyclic dependency a -> b -> a"},
        BadDefinition{
            "run_params_mismatch.json", "reference",
            "run() parameters (weight, x) must equal the input names in order (x, weight)"},
        BadDefinition{
            "kernelarc_unknown_key.json", "kernelarc.flop",
            "unknown field (expected one of op_family, op_params, flops, bytes, native_reference, "
            "baseline, baseline_tolerance)"},
        BadDefinition{
            "baseline_params_mismatch.json", "kernelarc.baseline",
            "run() parameters (weight, x) must equal the input names in order (x, weight)"},
        BadDefinition{"baseline_tolerance_without_baseline.json", "kernelarc.baseline_tolerance",
                      "expected only beside kernelarc.baseline"},
        BadDefinition{"baseline_tolerance_bad_ratio.json",
                      "kernelarc.baseline_tolerance.required_matched_ratio",
                      "expected a number in (0, 1], got 1.5"},
        BadDefinition{"input_named_like_axis.json", "inputs.batch_size",
                      "an input may not have the name of an axis"},
        BadDefinition{"custom_entrypoint_missing.json", "custom_inputs_entrypoint",
                      "the reference defines no top-level \"def make_inputs(\""},
        BadDefinition{"expr_syntax_error.json", "axes.groups.expression",
                      "\"hidden_size // * 16\": at column 16: unexpected '*'"},
        BadDefinition{"constraint_unknown_axis.json", "constraints[1]",
                      "uses \"hiden\", which is not an axis"},
        BadDefinition{"const_value_wrong_type.json", "axes.hidden_size.value",
                      "expected integer, got string \"64\""},
        BadDefinition{"no_outputs.json", "outputs", "expected at least one output"},
        BadDefinition{"const_value_null.json", "axes.hidden_size.value",
                      "expected integer, got null"},
        BadDefinition{"dtype_null.json", "inputs.weight.dtype", "expected string, got null"},
        BadDefinition{"reference_null.json", "reference", "expected string, got null"}));

TEST(Definition, BadJsonNamesTheFileAndPosition) {
  const auto path = fixture("malformed/definition/bad_json.json");
  const std::string message = input_error_of([&] { load_definition(path); });
  EXPECT_EQ(message.rfind(path.string() + ": invalid JSON: ", 0), 0u) << message;
  EXPECT_NE(message.find("line 5"), std::string::npos) << message;
}

TEST(Definition, MissingFileAndWrongRoot) {
  TempDir dir;
  const std::string missing = input_error_of([&] { load_definition(dir / "nope.json"); });
  EXPECT_NE(missing.find((dir / "nope.json").string() + ": cannot open"), std::string::npos)
      << missing;
  const auto path = dir.write("array.json", "[1, 2]");
  EXPECT_EQ(input_error_of([&] { load_definition(path); }),
            path.string() + ": expected object, got array");
}

}  // namespace
}  // namespace kernelarc
