#include <gtest/gtest.h>

#include "core/problem.h"
#include "test_support.h"

namespace kernelarc {
namespace {

using testing::fixture;
using testing::input_error_of;
using testing::TempDir;

Definition toy_definition() {
  return load_definition(fixture("malformed/workload/definition.json"));
}

TEST(Workload, ParsesBareAndWrappedLines) {
  TempDir dir;
  const auto path = dir.write(
      "workload.jsonl",
      R"({"uuid": "a", "axes": {"batch_size": 4, "H_qo": 32, "H_kv": 8, "H_r": 4}, "inputs": {"q": {"type": "random"}, "k": {"type": "safetensors", "path": "blob/k.safetensors", "tensor_key": "k0"}, "scale": {"type": "scalar", "value": 0.125}}, "tolerance": {"max_atol": 0.005, "max_rtol": 0.02, "required_matched_ratio": 0.95, "max_error_cap": null, "allow_negative_inf": true}}

{"definition": "gqa_toy", "solution": null, "workload": {"uuid": "b", "axes": {"batch_size": 1, "H_qo": 8}, "inputs": {"q": {"type": "custom"}, "k": {"type": "custom"}, "scale": {"type": "custom"}}}, "evaluation": null}
   
{"uuid": "c", "axes": {"batch_size": 0, "H_qo": 64}, "inputs": {"q": {"type": "random"}, "k": {"type": "random"}, "scale": {"type": "scalar", "value": 2}}, "tolerance": {"max_error_cap": 0.5}})");
  const Definition def = toy_definition();
  const std::vector<Workload> workloads = load_workloads(path, def);
  ASSERT_EQ(workloads.size(), 3u);

  const Workload& a = workloads[0];
  EXPECT_EQ(a.uuid, "a");
  EXPECT_EQ(a.line, 1);
  EXPECT_EQ(a.axes, (AxisValues{{"batch_size", 4}, {"H_qo", 32}}));  // var axes only
  EXPECT_EQ(a.inputs.at("q").kind, InputKind::Random);
  EXPECT_EQ(a.inputs.at("k").kind, InputKind::Safetensors);
  EXPECT_EQ(a.inputs.at("k").path, "blob/k.safetensors");
  EXPECT_EQ(a.inputs.at("k").tensor_key, "k0");
  EXPECT_EQ(a.inputs.at("scale").kind, InputKind::Scalar);
  EXPECT_EQ(a.inputs.at("scale").scalar_value, 0.125);
  EXPECT_EQ(a.tolerance.max_atol, 0.005);
  EXPECT_EQ(a.tolerance.max_rtol, 0.02);
  EXPECT_EQ(a.tolerance.required_matched_ratio, 0.95);
  EXPECT_FALSE(a.tolerance.max_error_cap.has_value());
  EXPECT_TRUE(a.tolerance.allow_negative_inf);
  EXPECT_EQ(a.raw["uuid"], "a");

  const Workload& b = workloads[1];
  EXPECT_EQ(b.uuid, "b");
  EXPECT_EQ(b.line, 3);
  EXPECT_EQ(b.inputs.at("scale").kind, InputKind::Custom);
  EXPECT_EQ(b.tolerance.max_atol, 1e-2);  // SOL-ExecBench defaults
  EXPECT_EQ(b.tolerance.required_matched_ratio, 0.99);
  EXPECT_FALSE(b.raw.contains("definition"));  // the bare workload, unwrapped

  EXPECT_EQ(workloads[2].line, 5);
  EXPECT_EQ(workloads[2].tolerance.max_error_cap, 0.5);
}

TEST(Workload, ResolvesAxesAndShapes) {
  const Definition def = toy_definition();
  Workload workload;
  workload.uuid = "x";
  workload.axes = {{"batch_size", 3}, {"H_qo", 16}};
  const AxisValues axes = resolve_axes(def, workload);
  EXPECT_EQ(axes, (AxisValues{
                      {"batch_size", 3}, {"H_qo", 16}, {"H_kv", 8}, {"H_r", 2}, {"head_dim", 16}}));
  EXPECT_EQ(resolve_shape(def.inputs[0], axes), (std::vector<int64_t>{3, 16, 16}));
  EXPECT_EQ(resolve_shape(def.inputs[1], axes), (std::vector<int64_t>{3, 8, 16}));
  EXPECT_TRUE(resolve_shape(def.inputs[2], axes).empty());

  workload.axes = {{"batch_size", 3}, {"H_qo", 12}};
  const std::string violated = input_error_of([&] { resolve_axes(def, workload); });
  EXPECT_NE(violated.find("workload \"x\""), std::string::npos) << violated;
  EXPECT_NE(violated.find("constraints[0]: \"H_qo == H_kv * H_r\" does not hold (H_kv=8, H_qo=12, "
                          "H_r=1)"),
            std::string::npos)
      << violated;
  workload.axes = {{"H_qo", 16}};
  EXPECT_NE(input_error_of([&] {
              resolve_axes(def, workload);
            }).find("axes.batch_size: missing value for var axis"),
            std::string::npos);
}

TEST(Workload, ExprAxesResolveInDependencyOrder) {
  const OrderedJson json = OrderedJson::parse(R"({
    "name": "chain", "axes": {"c": {"type": "expr", "expression": "b * 2"},
                              "b": {"type": "expr", "expression": "a + 1"},
                              "a": {"type": "var"},
                              "d": {"type": "expr", "expression": "a - 10"}},
    "inputs": {"x": {"shape": ["c"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["b"], "dtype": "float32"}},
    "reference": "def run(x):\n    return x\n"})");
  const Definition def = parse_definition(json, "chain.json");
  Workload workload;
  workload.uuid = "w";
  workload.axes = {{"a", 20}};
  const AxisValues axes = resolve_axes(def, workload);
  EXPECT_EQ(axes.at("c"), 42);
  EXPECT_EQ(axes.at("d"), 10);
  workload.axes = {{"a", 3}};
  const std::string message = input_error_of([&] { resolve_axes(def, workload); });
  EXPECT_NE(message.find("axes.d.expression: \"a - 10\" evaluates to -7; an axis must be >= 0"),
            std::string::npos)
      << message;
}

struct BadWorkload {
  const char* file;
  int line;
  const char* field;
  const char* problem;
};

class MalformedWorkload : public ::testing::TestWithParam<BadWorkload> {};

TEST_P(MalformedWorkload, NamesFileLineFieldAndProblem) {
  const BadWorkload& bad = GetParam();
  const Definition def = toy_definition();
  const auto path = fixture(std::string("malformed/workload/") + bad.file);
  const std::string message = input_error_of([&] { load_workloads(path, def); });
  const std::string prefix = path.string() + ":" + std::to_string(bad.line) + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
  if (*bad.field != '\0') {
    EXPECT_EQ(message.find(prefix + bad.field + ": "), 0u) << message;
  }
  EXPECT_NE(message.find(bad.problem), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, MalformedWorkload,
    ::testing::Values(
        BadWorkload{"missing_var_axis.jsonl", 2, "axes.H_qo", "missing value for var axis"},
        BadWorkload{"bad_json_line3.jsonl", 3, "",
                    "invalid JSON: parse error at column 65: syntax error"},
        BadWorkload{"duplicate_uuid.jsonl", 3, "uuid", "duplicate \"w1\" (first on line 1)"},
        BadWorkload{"custom_mixed_with_random.jsonl", 1, "inputs",
                    "2 of 3 inputs are \"custom\"; a workload with a custom input must make all "
                    "inputs custom"},
        BadWorkload{"constraint_violated.jsonl", 2, "constraints[0]",
                    "\"H_qo == H_kv * H_r\" does not hold (H_kv=8, H_qo=12, H_r=1)"},
        BadWorkload{"unknown_axis.jsonl", 1, "axes.seq_len",
                    "unknown axis (the definition \"gqa_toy\" has no axis \"seq_len\")"},
        BadWorkload{"axis_wrong_type.jsonl", 1, "axes.batch_size",
                    "expected integer, got string \"4\""},
        BadWorkload{"tolerance_wrong_type.jsonl", 1, "tolerance.max_atol",
                    "expected number, got string \"0.1\""},
        BadWorkload{"axis_null.jsonl", 1, "axes.batch_size", "expected integer, got null"},
        BadWorkload{"uuid_null.jsonl", 1, "uuid", "expected string, got null"},
        BadWorkload{"scalar_for_tensor.jsonl", 1, "inputs.q.type",
                    "\"scalar\" needs an input of shape null or []"},
        BadWorkload{"wrapped_missing_input.jsonl", 1, "workload.inputs.scale", "missing input"},
        BadWorkload{"const_axis_mismatch.jsonl", 1, "axes.H_kv",
                    "const axis is 8 in the definition, got 4"},
        BadWorkload{"ratio_out_of_range.jsonl", 1, "tolerance.required_matched_ratio",
                    "expected a number in (0, 1], got 1.5"},
        BadWorkload{"negative_axis.jsonl", 1, "axes.batch_size",
                    "expected an integer >= 0, got -1"},
        BadWorkload{
            "unknown_input_type.jsonl", 1, "inputs.q.type",
            "expected \"random\", \"scalar\", \"safetensors\" or \"custom\", got \"randn\""},
        BadWorkload{"wrong_definition.jsonl", 1, "definition",
                    "expected \"gqa_toy\", got \"other_problem\""}));

TEST(Workload, CustomNeedsAnEntrypoint) {
  TempDir dir;
  OrderedJson json = toy_definition().raw;
  json.erase("custom_inputs_entrypoint");
  const Definition def = parse_definition(json, "toy.json");
  const auto path = dir.write(
      "w.jsonl",
      R"({"uuid": "a", "axes": {"batch_size": 1, "H_qo": 8}, "inputs": {"q": {"type": "custom"}, "k": {"type": "custom"}, "scale": {"type": "custom"}}})");
  const std::string message = input_error_of([&] { load_workloads(path, def); });
  EXPECT_EQ(message, path.string() +
                         ":1: inputs.q.type: \"custom\" needs a custom_inputs_entrypoint in the "
                         "definition");
}

TEST(Workload, LoadProblemReadsBothFiles) {
  TempDir dir;
  std::filesystem::copy_file(fixture("malformed/workload/definition.json"),
                             dir / "definition.json");
  dir.write(
      "workload.jsonl",
      R"({"uuid": "a", "axes": {"batch_size": 2, "H_qo": 8}, "inputs": {"q": {"type": "random"}, "k": {"type": "random"}, "scale": {"type": "scalar", "value": 1}}})"
      "\n");
  const Problem problem = load_problem(dir.path());
  EXPECT_EQ(problem.dir, dir.path());
  EXPECT_EQ(problem.definition.name, "gqa_toy");
  ASSERT_EQ(problem.workloads.size(), 1u);
  EXPECT_EQ(problem.workloads[0].uuid, "a");

  dir.write("workload.jsonl", "\n\n");
  EXPECT_EQ(input_error_of([&] { load_problem(dir.path()); }),
            (dir / "workload.jsonl").string() + ": contains no workloads");
  std::filesystem::remove(dir / "workload.jsonl");
  EXPECT_NE(input_error_of([&] {
              load_problem(dir.path());
            }).find((dir / "workload.jsonl").string() + ": cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace kernelarc
