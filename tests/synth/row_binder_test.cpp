#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/bound_template.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;

using testing::input_error_of;

const std::string kProblems = std::string(KERNELARC_SOURCE_DIR) + "/problems/";

KernelTemplate row_template(const std::string& target, TemplateBuild build) {
  return testing::stub_template(
      "row_test", {"rmsnorm", "layernorm", "softmax", "logsumexp", "quantize", "reduce"}, target,
      build);
}

const KernelTemplate& cuda_template() {
  static const KernelTemplate kernel = row_template("cuda", TemplateBuild::Nvrtc);
  return kernel;
}

const KernelTemplate& cpu_template() {
  static const KernelTemplate kernel = row_template("cpu", TemplateBuild::SharedObject);
  return kernel;
}

FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) {
  return make_row_binder()->bind(def, kernel);
}

FamilyBinding bind_problem(const std::string& problem, const KernelTemplate& kernel) {
  return bind(load_definition(kProblems + problem + "/definition.json"), kernel);
}

/// A definition with rows [batch, hidden] built from tensor and op_params JSON.
Definition make_definition(const std::string& family, const OrderedJson& inputs,
                           const OrderedJson& outputs,
                           const OrderedJson& op_params = OrderedJson::object()) {
  std::string parameters;
  for (const auto& [name, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + name;
  OrderedJson json = {
      {"name", "row_case"},
      {"op_type", family},
      {"axes", {{"batch", {{"type", "var"}}}, {"hidden", {{"type", "const"}, {"value", 64}}}}},
      {"inputs", inputs},
      {"outputs", outputs},
      {"reference", "def run(" + parameters + "):\n    pass\n"},
      {"kernelarc", {{"op_family", family}, {"op_params", op_params}}}};
  return parse_definition(json, "row_case.json");
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

const std::vector<std::string> kRow = {"batch", "hidden"};

TEST(RowBinder, ServesTheSixFamilies) {
  const std::vector<std::string> expected = {"rmsnorm",   "layernorm", "softmax",
                                             "logsumexp", "quantize",  "reduce"};
  EXPECT_EQ(make_row_binder()->families(), expected);
}

TEST(RowBinder, BindsRmsnormBf16) {
  const FamilyBinding binding = bind_problem("cuda/rmsnorm_bf16", cuda_template());
  EXPECT_EQ(binding.sizes.at("ROWS"), "batch_size");
  EXPECT_EQ(binding.sizes.at("COLS"), "hidden_size");
  EXPECT_EQ(binding.constants.at("MAX_ELEM_BYTES"), 2);
  EXPECT_EQ(binding.constants.at("NUM_ROW_INPUTS"), 1);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_OP_RMSNORM 1"));
  EXPECT_TRUE(contains(h, "#define KA_OP_LAYERNORM 0"));
  EXPECT_TRUE(contains(h, "#define KA_EPS 1e-05f"));
  EXPECT_TRUE(contains(h, "#define KA_HAS_WEIGHT 1"));
  EXPECT_TRUE(contains(h, "#define KA_HAS_BIAS 0"));
  EXPECT_TRUE(contains(h, "#define KA_HAS_PROLOGUE_OUTPUT 0"));
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CUDA 1"));
  EXPECT_TRUE(contains(h, "const __nv_bfloat16* weight_;"));
  EXPECT_TRUE(contains(h,
                       "#define KA_KERNEL_PARAMS const __nv_bfloat16* ka_in_hidden_states, const "
                       "__nv_bfloat16* ka_in_weight, __nv_bfloat16* ka_out_output, long long "
                       "ka_axis_batch_size, long long ka_axis_hidden_size"));
  EXPECT_TRUE(contains(h,
                       "#define KA_ARGS (KaArgs{ka_in_hidden_states, ka_in_weight, "
                       "ka_out_output, 1LL * ka_axis_batch_size, ka_axis_hidden_size})"));
  EXPECT_FALSE(contains(h, "ka_bind"));
}

TEST(RowBinder, BindsFusedAddWithPrologueOutput) {
  const FamilyBinding binding = bind_problem("cuda/fused_add_rmsnorm_bf16", cuda_template());
  EXPECT_EQ(binding.constants.at("NUM_ROW_INPUTS"), 2);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_HAS_PROLOGUE_OUTPUT 1"));
  EXPECT_TRUE(contains(h, "v[i] = ((v_hidden_states[i]) + (v_residual[i]));"));
  EXPECT_TRUE(contains(h, "ka_row_store<N>(prologue_out_ + row * cols_ + col, v);"));
  EXPECT_TRUE(contains(h, "ka_out_output, ka_out_residual_out, 1LL"));
}

TEST(RowBinder, BindsLayernormWeightAndBias) {
  const std::string h = bind_problem("cuda/layernorm_bf16", cuda_template()).header;
  EXPECT_TRUE(contains(h, "#define KA_OP_LAYERNORM 1"));
  EXPECT_TRUE(contains(h, "#define KA_HAS_WEIGHT 1"));
  EXPECT_TRUE(contains(h, "#define KA_HAS_BIAS 1"));
  EXPECT_TRUE(contains(h, "ka_row_load<N>(bias_ + col, v);"));
}

TEST(RowBinder, BindsSoftmaxWithoutEps) {
  const FamilyBinding binding = bind_problem("cuda/softmax_f32", cuda_template());
  EXPECT_EQ(binding.sizes.at("COLS"), "seq_len");
  EXPECT_EQ(binding.constants.at("MAX_ELEM_BYTES"), 4);
  EXPECT_TRUE(contains(binding.header, "#define KA_OP_SOFTMAX 1"));
  EXPECT_TRUE(contains(binding.header, "#define KA_HAS_WEIGHT 0"));
  EXPECT_TRUE(contains(binding.header, "v[i] = 1.0f;"));
}

TEST(RowBinder, CpuHeadersBindTheTensors) {
  const FamilyBinding rms = bind_problem("cpu/rmsnorm_f32", cpu_template());
  EXPECT_TRUE(contains(rms.header, "#define KA_TARGET_CPU 1"));
  EXPECT_TRUE(contains(rms.header, "#define KA_EPS 1e-06f"));
  EXPECT_TRUE(contains(rms.header, "inline const char* ka_bind("));
  EXPECT_FALSE(contains(rms.header, "KA_KERNEL_PARAMS"));
  // num_tokens is an expr axis: the rows are its extent, bound from the tensor.
  const FamilyBinding layer = bind_problem("cpu/layernorm_f32", cpu_template());
  EXPECT_EQ(layer.sizes.at("ROWS"), "num_tokens");
  EXPECT_TRUE(contains(layer.header, "#define KA_HAS_BIAS 1"));
  const FamilyBinding softmax = bind_problem("cpu/softmax_f32", cpu_template());
  EXPECT_TRUE(contains(softmax.header, "#define KA_OP_SOFTMAX 1"));
  EXPECT_TRUE(contains(softmax.header, "\"x\", KA_FLOAT32, 2"));
}

TEST(RowBinder, BindsLogsumexpToOneValuePerRow) {
  const Definition def =
      make_definition("logsumexp", {{"x", tensor(kRow, "bfloat16")}}, {{"lse", tensor({"batch"})}});
  const FamilyBinding binding = bind(def, cuda_template());
  EXPECT_TRUE(contains(binding.header, "#define KA_OP_LOGSUMEXP 1"));
  EXPECT_TRUE(contains(binding.header, "KA_HD void store_row_value(long long row, float value)"));
  EXPECT_FALSE(contains(binding.header, "void store_row("));
}

TEST(RowBinder, BindsPerTokenFloat8QuantizeToRowsAndScales) {
  const FamilyBinding binding =
      bind_problem("cuda/fp8_quant_per_token_bf16_h7168", cuda_template());
  const std::string& h = binding.header;
  EXPECT_EQ(binding.sizes.at("ROWS"), "num_tokens");
  EXPECT_TRUE(contains(h, "#define KA_OP_QUANTIZE 1"));
  EXPECT_TRUE(contains(h, "#define KA_FP8_MAX 448.0f"));
  EXPECT_TRUE(contains(h, "cvt.rn.satfinite.e4m3x2.f32"));
  EXPECT_TRUE(contains(h, "KaFp8E4M3* out_;"));
  EXPECT_TRUE(contains(h, "float* scale_out_;"));
  EXPECT_TRUE(contains(h, "void store_row_scale(long long row, float scale)"));
  EXPECT_TRUE(contains(h, "void store_row("));
  EXPECT_TRUE(contains(h, "KaFp8E4M3* ka_out_x_fp8, float* ka_out_scale"));
  EXPECT_TRUE(contains(h, "KaArgs{ka_in_x, ka_out_x_fp8, ka_out_scale,"));
  // The other row ops carry the macro switched off and no float8 code.
  const std::string norm = bind_problem("cuda/rmsnorm_bf16", cuda_template()).header;
  EXPECT_TRUE(contains(norm, "#define KA_OP_QUANTIZE 0"));
  EXPECT_FALSE(contains(norm, "KaFp8E4M3"));

  const Definition e5m2 =
      make_definition("quantize", {{"x", tensor(kRow, "float16")}},
                      {{"q", tensor(kRow, "float8_e5m2")}, {"s", tensor({"batch"})}},
                      {{"format", "float8_e5m2"}, {"granularity", "per_token"}});
  const std::string h5 = bind(e5m2, cuda_template()).header;
  EXPECT_TRUE(contains(h5, "#define KA_FP8_MAX 57344.0f"));
  EXPECT_TRUE(contains(h5, "KaFp8E5M2* out_;"));
}

TEST(RowBinder, RejectsQuantizeDefinitionsItCannotServe) {
  const OrderedJson outputs = {{"q", tensor(kRow, "float8_e4m3fn")}, {"s", tensor({"batch"})}};
  const auto error = [&](const OrderedJson& outs, const OrderedJson& params) {
    return input_error_of([&] {
      bind(make_definition("quantize", {{"x", tensor(kRow, "bfloat16")}}, outs, params),
           cuda_template());
    });
  };
  EXPECT_TRUE(contains(error(outputs, {{"format", "int8"}}),
                       "kernelarc.op_params.format: expected \"float8_e4m3fn\" or"));
  EXPECT_TRUE(contains(error(outputs, OrderedJson::object()), "kernelarc.op_params.format"));
  EXPECT_TRUE(contains(error(outputs, {{"format", "float8_e4m3fn"}, {"granularity", "per_tensor"}}),
                       "kernelarc.op_params.granularity: the row templates quantize per token"));
  EXPECT_TRUE(contains(error(outputs, {{"format", "float8_e5m2"}}),
                       "outputs.q.dtype: expected float8_e5m2"));
  EXPECT_TRUE(
      contains(error({{"q", tensor(kRow, "float8_e4m3fn")}, {"s", tensor({"batch"}, "bfloat16")}},
                     {{"format", "float8_e4m3fn"}}),
               "outputs.s.dtype: expected float32 (the scale)"));
  EXPECT_TRUE(contains(error({{"q", tensor(kRow, "float8_e4m3fn")}}, {{"format", "float8_e4m3fn"}}),
                       "outputs: expected 2 outputs"));
  EXPECT_TRUE(contains(error(outputs, {{"format", "float8_e4m3fn"}, {"eps", 1e-6}}),
                       "kernelarc.op_params.eps: a quantize takes no eps"));
}

TEST(RowBinder, BindsAReduceOverTheLastAxisToOneValuePerRow) {
  const std::string sum = bind_problem("cuda/row_sum_bf16_h8192", cuda_template()).header;
  EXPECT_TRUE(contains(sum, "#define KA_OP_REDUCE 1"));
  EXPECT_TRUE(contains(sum, "#define KA_REDUCTION 0"));  // KA_REDUCE_SUM
  EXPECT_TRUE(contains(sum, "KA_HD void store_row_value(long long row, float value)"));
  EXPECT_FALSE(contains(sum, "void store_row("));
  const Definition max =
      make_definition("reduce", {{"x", tensor(kRow, "float16")}},
                      {{"m", tensor({"batch"}, "bfloat16")}}, {{"op", "max"}, {"dim", 1}});
  const std::string h = bind(max, cuda_template()).header;
  EXPECT_TRUE(contains(h, "#define KA_REDUCTION 2"));  // KA_REDUCE_MAX
  EXPECT_TRUE(contains(h, "__nv_bfloat16* out_;"));
}

TEST(RowBinder, RejectsReducesItCannotServe) {
  const auto error = [&](const OrderedJson& outputs, const OrderedJson& params) {
    return input_error_of([&] {
      bind(make_definition("reduce", {{"x", tensor(kRow)}}, outputs, params), cuda_template());
    });
  };
  const OrderedJson per_row = {{"s", tensor({"batch"})}};
  EXPECT_TRUE(contains(error(per_row, {{"op", "prod"}}),
                       "kernelarc.op_params.op: expected \"sum\", \"mean\", \"max\" or \"min\", "
                       "got \"prod\""));
  EXPECT_TRUE(contains(error(per_row, {{"op", "sum"}, {"dim", 0}}),
                       "kernelarc.op_params.dim: the row templates reduce the last axis"));
  EXPECT_TRUE(
      contains(error({{"s", tensor(kRow)}}, {{"op", "sum"}}), "outputs.s: expected shape [batch]"));
  EXPECT_TRUE(contains(error(per_row, {{"op", "sum"}, {"keepdim", true}}),
                       "kernelarc.op_params.keepdim: unknown field (expected op, dim, prologue)"));
}

TEST(RowBinder, LayernormVectorsGoByOrderWithoutNames) {
  const Definition def = make_definition(
      "layernorm",
      {{"x", tensor(kRow)}, {"gamma", tensor({"hidden"})}, {"beta", tensor({"hidden"})}},
      {{"y", tensor(kRow, "float16")}});
  const std::string h = bind(def, cuda_template()).header;
  EXPECT_TRUE(contains(h, "KaArgs{ka_in_x, ka_in_gamma, ka_in_beta, ka_out_y"));
  EXPECT_TRUE(contains(h, "__half* out_;"));
}

TEST(RowBinder, ScalarsJoinThePrologue) {
  const Definition def = make_definition(
      "softmax", {{"x", tensor(kRow)}, {"scale", {{"shape", nullptr}, {"dtype", "float32"}}}},
      {{"y", tensor(kRow)}}, {{"prologue", "x * scale"}});
  const std::string h = bind(def, cuda_template()).header;
  EXPECT_TRUE(contains(h, "const float s_scale = ka_row_to_float(*scalar_scale);"));
  EXPECT_TRUE(contains(h, "v[i] = ((v_x[i]) * (s_scale));"));
}

TEST(RowBinder, RejectsTwoRowInputsWithoutPrologue) {
  const Definition def =
      make_definition("rmsnorm", {{"a", tensor(kRow)}, {"b", tensor(kRow)}}, {{"y", tensor(kRow)}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, cuda_template()); }),
                       "kernelarc.op_params.prologue: required with several row inputs"));
}

TEST(RowBinder, RejectsPrologueOutputNamingNoOutput) {
  const Definition def =
      make_definition("rmsnorm", {{"a", tensor(kRow)}, {"b", tensor(kRow)}}, {{"y", tensor(kRow)}},
                      {{"prologue", "a + b"}, {"prologue_output", "sum"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, cuda_template()); }),
                       "kernelarc.op_params.prologue_output: no output named \"sum\""));
}

TEST(RowBinder, RejectsEpsOnSoftmax) {
  const Definition def =
      make_definition("softmax", {{"x", tensor(kRow)}}, {{"y", tensor(kRow)}}, {{"eps", 1e-5}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, cuda_template()); }),
                       "kernelarc.op_params.eps: a softmax takes no eps"));
}

TEST(RowBinder, RejectsWrongWeightShape) {
  const Definition def = make_definition(
      "rmsnorm", {{"x", tensor(kRow)}, {"weight", tensor({"batch"})}}, {{"y", tensor(kRow)}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, cuda_template()); }),
                       "inputs.weight: expected shape [hidden], got [batch]"));
}

TEST(RowBinder, RejectsIntegerRows) {
  const Definition def =
      make_definition("softmax", {{"x", tensor(kRow, "int32")}}, {{"y", tensor(kRow)}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, cuda_template()); }),
                       "inputs.x.dtype: expected float32, float16 or bfloat16, got int32"));
}

TEST(RowBinder, RejectsMisshapedOutputAndUnknownParams) {
  const Definition lse = make_definition("logsumexp", {{"x", tensor(kRow)}}, {{"y", tensor(kRow)}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(lse, cuda_template()); }),
                       "outputs.y: expected shape [batch]"));
  const Definition unknown =
      make_definition("rmsnorm", {{"x", tensor(kRow)}}, {{"y", tensor(kRow)}}, {{"epsilon", 1e-5}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(unknown, cuda_template()); }),
                       "kernelarc.op_params.epsilon: unknown field"));
  const Definition softmax_weight = make_definition(
      "softmax", {{"x", tensor(kRow)}, {"weight", tensor({"hidden"})}}, {{"y", tensor(kRow)}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(softmax_weight, cuda_template()); }),
                       "inputs.weight: a softmax takes no per-column input"));
}

TEST(RowTemplates, ServeEveryBuiltInProblemAtTheirDefaultPoint) {
  const std::string root = std::string(KERNELARC_SOURCE_DIR) + "/templates/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cuda/rownorm", "cuda/rmsnorm_bf16"},
      {"cuda/rownorm", "cuda/fused_add_rmsnorm_bf16"},
      {"cuda/rownorm", "cuda/layernorm_bf16"},
      {"cuda/rowsoftmax", "cuda/softmax_f32"},
      {"cuda/rownorm", "cuda/fp8_quant_per_token_bf16_h7168"},
      {"cuda/rownorm", "cuda/row_sum_bf16_h8192"},
      {"cpu/rowreduce", "cpu/rmsnorm_f32"},
      {"cpu/rowreduce", "cpu/layernorm_f32"},
      {"cpu/rowreduce", "cpu/softmax_f32"}};
  for (const auto& [dir, problem_dir] : cases) {
    SCOPED_TRACE(dir + " on " + problem_dir);
    const KernelTemplate kernel = load_template(root + dir, root + "common");
    const Problem problem = load_problem(kProblems + problem_dir);
    const BoundTemplate bound(kernel, problem);
    const KnobPoint point = kernel.knobs.default_point();
    EXPECT_EQ(bound.infeasible(point), std::nullopt);
    const Solution solution = bound.instantiate(point);
    const auto header = std::find_if(solution.sources.begin(), solution.sources.end(),
                                     [](const SourceFile& f) { return f.path == "ka_problem.h"; });
    ASSERT_NE(header, solution.sources.end());
    EXPECT_TRUE(contains(header->content, "struct KaArgs"));
  }
}

}  // namespace
}  // namespace kernelarc
