// The loaders accept what SOL-ExecBench's and FlashInfer-Bench's pydantic schemas accept: the
// upstream example files in tests/data/schemas, and the schema features they do not exercise.
#include <gtest/gtest.h>

#include "core/problem.h"
#include "core/tensor.h"
#include "test_support.h"

namespace kernelarc {
namespace {

using testing::fixture;
using testing::input_error_of;
using testing::TempDir;

Problem load_schema_problem(const std::string& name) {
  Problem problem = load_problem(fixture("schemas/" + name));
  for (const Workload& workload : problem.workloads) resolve_axes(problem.definition, workload);
  return problem;
}

TEST(UpstreamSchema, SolExamplesWithNullOptionalFieldsLoad) {
  const Problem rmsnorm = load_schema_problem("sol_rmsnorm");
  EXPECT_EQ(rmsnorm.definition.inputs[0].name, "hidden_states");
  EXPECT_EQ(rmsnorm.definition.inputs[0].description, "");  // null in the file
  EXPECT_EQ(rmsnorm.workloads.size(), 14u);

  const Problem softmax = load_schema_problem("sol_softmax_cudnn");
  EXPECT_EQ(softmax.definition.custom_inputs_entrypoint, "");  // null in the file
  EXPECT_EQ(softmax.definition.op_type, "softmax");

  const Problem gemm = load_schema_problem("sol_gemm_cutlass");
  EXPECT_EQ(gemm.definition.custom_inputs_entrypoint, "");
  EXPECT_FALSE(gemm.workloads.empty());
}

TEST(UpstreamSchema, ConstraintsOverInputDataAreKeptButNotEvaluated) {
  const Problem problem = load_schema_problem("sol_gqa_paged_decode");
  const Definition& def = problem.definition;
  EXPECT_EQ(def.constraints, (std::vector<std::string>{"len_indptr == batch_size + 1",
                                                       "num_kv_indices == kv_indptr[-1].item()"}));
  EXPECT_EQ(def.data_constraints,
            (std::vector<std::string>{"num_kv_indices == kv_indptr[-1].item()"}));
  EXPECT_EQ(problem.workloads[0].inputs.at("kv_indptr").kind, InputKind::Safetensors);

  // The one over axes is still checked.
  Workload workload = problem.workloads[0];
  workload.axes["len_indptr"] = workload.axes.at("batch_size") + 2;
  EXPECT_NE(input_error_of([&] {
              resolve_axes(def, workload);
            }).find("constraints[0]: \"len_indptr == batch_size + 1\" does not hold"),
            std::string::npos);
}

TEST(UpstreamSchema, SolSolutionsInLanguagesKernelarcDoesNotBuildStillRead) {
  const Solution triton = load_solution(fixture("schemas/sol_rmsnorm/solution_triton.json"));
  EXPECT_EQ(triton.languages, (std::vector<std::string>{"triton"}));
  EXPECT_EQ(triton.binding, "");  // null in the file
  EXPECT_EQ(triton.raw["spec"]["binding"], nullptr);

  const Solution cudnn = load_solution(fixture("schemas/sol_softmax_cudnn/solution_cudnn.json"));
  EXPECT_EQ(cudnn.languages, (std::vector<std::string>{"cudnn"}));
}

TEST(UpstreamSchema, FlashInferTraceWrappedWorkloadsAndSolutionLoad) {
  const Problem problem = load_schema_problem("fib_gemm_n4096_k4096");
  EXPECT_EQ(problem.definition.op_type, "gemm");
  EXPECT_EQ(problem.definition.raw["tags"][0], "status:verified");
  ASSERT_EQ(problem.workloads.size(), 43u);
  EXPECT_EQ(problem.workloads[0].uuid, "280860e6-08f0-427c-b7c5-9cffcfab1a10");
  EXPECT_EQ(problem.workloads[0].axes.at("M"), 256);
  EXPECT_EQ(problem.workloads[0].raw["uuid"], problem.workloads[0].uuid);  // the bare workload

  const Solution solution = load_solution(fixture("schemas/fib_gemm_n4096_k4096/solution.json"));
  EXPECT_EQ(solution.languages, (std::vector<std::string>{"cuda"}));
  EXPECT_EQ(solution.entry_symbol, "gemm_n_4096_k_4096");
}

TEST(UpstreamSchema, Float4InputsAreReadWithShapesCountingBytes) {
  const Problem problem = load_schema_problem("kernelarc_fp4_gemm");
  const Definition& def = problem.definition;
  EXPECT_EQ(def.inputs[0].dtype, DType::Float4E2M1);
  EXPECT_EQ(def.inputs[1].dtype, DType::Float4E2M1FNx2);
  EXPECT_TRUE(def.inputs[4].is_scalar());
  const AxisValues axes = resolve_axes(def, problem.workloads[0]);
  const std::vector<int64_t> shape = resolve_shape(def.inputs[0], axes);
  EXPECT_EQ(shape, (std::vector<int64_t>{128, 256}));  // 512 values of k in 256 bytes
  const HostTensor tensor(def.inputs[0].dtype, shape);
  EXPECT_EQ(tensor.nbytes(), 128u * 256u);
  EXPECT_EQ(input_error_of([&] { (void)tensor.at(0); }),
            "float4_e2m1 packs two values per byte; its elements cannot be read or written one "
            "value at a time (only drawn as whole tensors, stored and passed to kernels)");
}

constexpr const char* kAllOptionalNull = R"({
  "name": "scale", "op_type": null, "description": null, "hf_id": null, "tags": null,
  "custom_inputs_entrypoint": null, "constraints": null, "kernelarc": null,
  "axes": {"n": {"type": "var", "description": null}, "c": {"type": "const", "value": 4, "description": null}},
  "inputs": {"x": {"shape": ["n", "c"], "dtype": "float32", "description": null}},
  "outputs": {"y": {"shape": ["n", "c"], "dtype": "float32", "description": null}},
  "reference": "def run(x):\n    return x\n"
})";

TEST(UpstreamSchema, NullMeansAbsentForEveryOptionalField) {
  const Definition def = parse_definition(OrderedJson::parse(kAllOptionalNull), "null.json");
  EXPECT_EQ(def.op_type, "");
  EXPECT_EQ(def.description, "");
  EXPECT_TRUE(def.constraints.empty());
  EXPECT_EQ(def.ext.op_family, "");
  EXPECT_TRUE(def.ext.op_params.empty());

  TempDir dir;
  const auto path = dir.write(
      "w.jsonl",
      R"({"uuid": "a", "axes": {"n": 2}, "inputs": {"x": {"type": "random"}}, "tolerance": null})"
      "\n"
      R"({"uuid": "b", "axes": {"n": 2}, "inputs": {"x": {"type": "random"}}, "tolerance": {"max_atol": null, "max_rtol": null, "required_matched_ratio": null, "max_error_cap": null, "allow_negative_inf": null}})"
      "\n");
  const std::vector<Workload> workloads = load_workloads(path, def);
  for (const Workload& workload : workloads) {
    EXPECT_EQ(workload.tolerance.max_atol, 1e-2);
    EXPECT_EQ(workload.tolerance.required_matched_ratio, 0.99);
    EXPECT_FALSE(workload.tolerance.max_error_cap.has_value());
  }

  const Solution solution = parse_solution(OrderedJson::parse(R"({
    "name": "s", "definition": "scale", "author": null, "description": null, "kernelarc": null,
    "spec": {"languages": ["cpp"], "target_hardware": null, "entry_point": "k.cpp::ka_run",
             "dependencies": null, "destination_passing_style": null, "binding": null,
             "compile_options": null},
    "sources": [{"path": "k.cpp", "content": "int x;"}]})"),
                                           "null_solution.json", ".");
  EXPECT_EQ(solution.author, "");
  EXPECT_TRUE(solution.target_hardware.empty());
  EXPECT_TRUE(solution.destination_passing_style);
  EXPECT_EQ(solution.binding, "");
  EXPECT_TRUE(solution.ext.empty());
}

TEST(UpstreamSchema, UnknownFieldsAreIgnoredAndKeptInRaw) {
  const Definition def = parse_definition(OrderedJson::parse(R"({
    "name": "scale", "future_field": 1,
    "axes": {"n": {"type": "var", "value": 7}, "c": {"type": "const", "value": 4, "unit": "x"}},
    "inputs": {"x": {"shape": ["n", "c"], "dtype": "float32", "layout": "row"}},
    "outputs": {"y": {"shape": ["n", "c"], "dtype": "float32"}},
    "reference": "def run(x):\n    return x\n"})"),
                                          "extra.json");
  EXPECT_EQ(def.raw["future_field"], 1);
  EXPECT_EQ(def.raw["axes"]["n"]["value"], 7);  // a var axis's "value" is not a const value
  EXPECT_EQ(def.find_axis("n")->kind, AxisKind::Var);

  TempDir dir;
  const auto path = dir.write(
      "w.jsonl",
      R"({"uuid": "a", "note": "x", "axes": {"n": 2}, "inputs": {"x": {"type": "random", "seed": 3}}, "tolerance": {"max_atol": 0.5, "atol": 9}})"
      "\n");
  const Workload workload = load_workloads(path, def)[0];
  EXPECT_EQ(workload.tolerance.max_atol, 0.5);
  EXPECT_EQ(workload.raw["tolerance"]["atol"], 9);
  EXPECT_EQ(workload.raw["note"], "x");

  const Solution solution = parse_solution(OrderedJson::parse(R"({
    "name": "s", "definition": "scale", "extra": true,
    "spec": {"languages": ["cpp"], "entry_point": "k.cpp::ka_run", "build": "fast",
             "compile_options": {"cflags": ["-O2"], "nvcc_flags": []}},
    "sources": [{"path": "k.cpp", "content": "int x;", "sha": "abc"}]})"),
                                           "extra_solution.json", ".");
  EXPECT_EQ(solution.cflags, (std::vector<std::string>{"-O2"}));
  EXPECT_EQ(solution.raw["spec"]["build"], "fast");
}

TEST(UpstreamSchema, AxisAndInputTypesDefaultAsPydanticsUnionsPickThem) {
  const Definition def = parse_definition(OrderedJson::parse(R"({
    "name": "typeless",
    "axes": {"n": {}, "c": {"value": 4}, "h": {"expression": "c // 2"}},
    "inputs": {"x": {"shape": ["n", "c"], "dtype": "float32"},
               "t": {"shape": ["h"], "dtype": "int32"},
               "s": {"shape": null, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n", "c"], "dtype": "float32"}},
    "reference": "def run(x, t, s):\n    return x * s\n"})"),
                                          "typeless.json");
  EXPECT_EQ(def.find_axis("n")->kind, AxisKind::Var);
  EXPECT_EQ(def.find_axis("c")->kind, AxisKind::Const);
  EXPECT_EQ(def.find_axis("c")->value, 4);
  EXPECT_EQ(def.find_axis("h")->kind, AxisKind::Expr);

  TempDir dir;
  const auto path = dir.write(
      "w.jsonl",
      R"({"uuid": "a", "axes": {"n": 2}, "inputs": {"x": {}, "t": {"path": "t.safetensors", "tensor_key": "t"}, "s": {"value": 0.5}}})"
      "\n");
  const Workload workload = load_workloads(path, def)[0];
  EXPECT_EQ(workload.inputs.at("x").kind, InputKind::Random);
  EXPECT_EQ(workload.inputs.at("t").kind, InputKind::Safetensors);
  EXPECT_EQ(workload.inputs.at("t").tensor_key, "t");
  EXPECT_EQ(workload.inputs.at("s").kind, InputKind::Scalar);
  EXPECT_EQ(workload.inputs.at("s").scalar_value, 0.5);
}

TEST(UpstreamSchema, ADecimalShapeEntryIsALiteralSize) {
  const Definition def = parse_definition(OrderedJson::parse(R"({
    "name": "literal", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n", "1", "16"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["16", "n"], "dtype": "float32"}},
    "reference": "def run(x):\n    return x\n"})"),
                                          "literal.json");
  EXPECT_EQ(def.axes.size(), 1u);
  Workload workload;
  workload.uuid = "w";
  workload.axes = {{"n", 3}};
  const AxisValues axes = resolve_axes(def, workload);
  EXPECT_EQ(resolve_shape(def.inputs[0], axes), (std::vector<int64_t>{3, 1, 16}));
  EXPECT_EQ(resolve_shape(def.outputs[0], axes), (std::vector<int64_t>{16, 3}));
  EXPECT_EQ(literal_size("0"), 0);
  EXPECT_EQ(literal_size("n"), std::nullopt);
  EXPECT_EQ(literal_size("-1"), std::nullopt);
  EXPECT_EQ(literal_size("99999999999999999999"), std::nullopt);
}

Definition with_reference(const std::string& reference) {
  OrderedJson json = OrderedJson::parse(R"({
    "name": "two", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "w": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}}})");
  json["reference"] = reference;
  return parse_definition(json, "two.json");
}

TEST(UpstreamSchema, RunIsCheckedAsItIsCalledByPosition) {
  // FlashInfer-Bench does not compare parameter names; keyword-only parameters are not filled.
  with_reference("def run(a, b):\n    return a * b\n");
  with_reference("def run(x, w, *, eps=1e-6):\n    return x * w\n");
  with_reference("def run(x, w, scale=1.0):\n    return x * w\n");
  with_reference("def run(*tensors):\n    return tensors[0]\n");
  EXPECT_EQ(input_error_of([&] { with_reference("def run(x):\n    return x\n"); }),
            "two.json: reference: run() takes 1 positional parameters (x), but it is called with "
            "the 2 inputs (x, w)");
  EXPECT_EQ(input_error_of([&] { with_reference("def run(x, w, z):\n    return x\n"); }),
            "two.json: reference: run() takes 3 positional parameters (x, w, z), but it is called "
            "with the 2 inputs (x, w)");
  EXPECT_EQ(input_error_of([&] { with_reference("def run(w, x):\n    return x\n"); }),
            "two.json: reference: run() parameters (w, x) must equal the input names in order "
            "(x, w)");
}

}  // namespace
}  // namespace kernelarc
