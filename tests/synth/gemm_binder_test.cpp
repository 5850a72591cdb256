#include <gtest/gtest.h>

#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;

using testing::input_error_of;

const std::string kProblems = std::string(KERNELARC_SOURCE_DIR) + "/problems/";

KernelTemplate gemm_template(const std::string& target, TemplateBuild build) {
  return KernelTemplate{.name = "gemm_test",
                        .target = *device_kind_from_name(target),
                        .families = {"gemm"},
                        .build = build,
                        .knobs = KnobSpace({Knob::int_set("BM", {64, 128})}, {})};
}

const KernelTemplate& nvrtc_template() {
  static const KernelTemplate kernel = gemm_template("cuda", TemplateBuild::Nvrtc);
  return kernel;
}

const KernelTemplate& cuda_so_template() {
  static const KernelTemplate kernel = gemm_template("cuda", TemplateBuild::SharedObject);
  return kernel;
}

const KernelTemplate& cpu_template() {
  static const KernelTemplate kernel = gemm_template("cpu", TemplateBuild::SharedObject);
  return kernel;
}

FamilyBinding bind(const Definition& def, const KernelTemplate& kernel) {
  return make_gemm_binder()->bind(def, kernel);
}

FamilyBinding bind_problem(const std::string& problem, const KernelTemplate& kernel) {
  return bind(load_definition(kProblems + problem + "/definition.json"), kernel);
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "bfloat16") {
  return {{"shape", shape}, {"dtype", dtype}};
}

/// A gemm definition over axes M, N, K (and an unrelated J) built from tensor JSON.
Definition make_definition(const OrderedJson& inputs, const OrderedJson& op_params = {},
                           const OrderedJson& output = tensor({"M", "N"})) {
  std::string params;
  for (const auto& [name, spec] : inputs.items()) params += (params.empty() ? "" : ", ") + name;
  OrderedJson json = {{"name", "gemm_case"},
                      {"axes",
                       {{"M", {{"type", "var"}}},
                        {"N", {{"type", "const"}, {"value", 256}}},
                        {"K", {{"type", "const"}, {"value", 128}}},
                        {"J", {{"type", "const"}, {"value", 64}}}}},
                      {"inputs", inputs},
                      {"outputs", {{"out", output}}},
                      {"reference", "def run(" + params + "):\n    return None\n"},
                      {"kernelarc",
                       {{"op_family", "gemm"},
                        {"op_params", op_params.is_null() ? OrderedJson::object() : op_params}}}};
  return parse_definition(json, "gemm_case.json");
}

OrderedJson linear_inputs() {
  return {{"x", tensor({"M", "K"})}, {"w", tensor({"N", "K"})}};
}

TEST(GemmBinder, ServesGemm) {
  EXPECT_EQ(make_gemm_binder()->families(), std::vector<std::string>{"gemm"});
}

TEST(GemmBinder, BindsLinearBf16ForNvrtc) {
  const FamilyBinding binding = bind_problem("cuda/gemm_bf16", nvrtc_template());
  EXPECT_EQ(binding.sizes.at("M"), "M");
  EXPECT_EQ(binding.sizes.at("N"), "N");
  EXPECT_EQ(binding.sizes.at("K"), "K");
  EXPECT_EQ(binding.constants.at("A_BYTES"), 2);
  EXPECT_EQ(binding.constants.at("B_BYTES"), 2);
  EXPECT_EQ(binding.constants.at("C_BYTES"), 2);
  EXPECT_EQ(binding.constants.at("A_K_MAJOR"), 1);
  EXPECT_EQ(binding.constants.at("B_K_MAJOR"), 1);
  EXPECT_EQ(binding.constants.at("EPILOGUE_KIND"), 0);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CUDA 1"));
  EXPECT_TRUE(contains(h, "typedef __nv_bfloat16 ka_a_t;"));
  EXPECT_TRUE(contains(h, "#define KA_A_K_MAJOR 1"));
  EXPECT_TRUE(contains(h, "#define KA_B_K_MAJOR 1"));
  EXPECT_TRUE(contains(h, "#define KA_EPILOGUE_KIND 0"));
  EXPECT_TRUE(contains(h, "#define KA_BIAS_INPUT -1"));
  EXPECT_TRUE(contains(h, "#define KA_INPUT_A 0"));
  EXPECT_TRUE(contains(h, "#define KA_INPUT_B 1"));
  EXPECT_TRUE(contains(h, "#define KA_CUDA_TYPE_A CUDA_R_16BF"));
  EXPECT_TRUE(contains(h, "const ka_a_t* __restrict__ ka_input_0"));
  EXPECT_TRUE(contains(h, "long long ka_axis_M, \\\n    long long ka_axis_N"));
  EXPECT_TRUE(contains(
      h,
      "(KaArgs{ka_input_0, ka_input_1, ka_output_0, ka_axis_M, ka_axis_N, ka_axis_K, nullptr})"));
  EXPECT_TRUE(contains(h, "pack.v[i] = ka_from_float<ka_c_t>(acc[i]);"));
  EXPECT_FALSE(contains(h, "ka_bind"));
}

TEST(GemmBinder, CudaSharedObjectsGetKaBindOutsideNvrtc) {
  const std::string h = bind_problem("cuda/gemm_bf16", cuda_so_template()).header;
  EXPECT_TRUE(contains(h, "#ifndef __CUDACC_RTC__\nstatic inline const char* ka_check_tensor("));
  EXPECT_TRUE(contains(h, "ka_check_tensor(inputs[1], \"weight\", KA_BFLOAT16, 2, message)"));
  EXPECT_FALSE(contains(h, "KA_KERNEL_PARAMS"));
}

TEST(GemmBinder, BindsMatmulF32ForCpu) {
  const FamilyBinding binding = bind_problem("cpu/matmul_f32", cpu_template());
  EXPECT_EQ(binding.constants.at("A_BYTES"), 4);
  EXPECT_EQ(binding.constants.at("A_K_MAJOR"), 1);
  EXPECT_EQ(binding.constants.at("B_K_MAJOR"), 0);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CPU 1"));
  EXPECT_TRUE(contains(h, "typedef float ka_b_t;"));
  EXPECT_TRUE(contains(h, "#define KA_B_K_MAJOR 0"));
  EXPECT_TRUE(contains(h, "static inline const char* ka_bind("));
  // b is [K, N]: its first dim must equal a's K, its second defines N.
  EXPECT_TRUE(contains(h, "args->k = inputs[0].shape[1];"));
  EXPECT_TRUE(contains(h, "if (inputs[1].shape[0] != args->k)"));
  EXPECT_TRUE(contains(h, "args->n = inputs[1].shape[1];"));
  EXPECT_FALSE(contains(h, "KA_CUDA_TYPE_A"));
}

TEST(GemmBinder, FindsTransposedOperandsByTheirShapes) {
  const Definition def = make_definition({{"wt", tensor({"K", "N"})}, {"xt", tensor({"K", "M"})}});
  const FamilyBinding binding = bind(def, nvrtc_template());
  EXPECT_EQ(binding.constants.at("A_K_MAJOR"), 0);
  EXPECT_EQ(binding.constants.at("B_K_MAJOR"), 0);
  EXPECT_TRUE(contains(binding.header, "#define KA_INPUT_A 1"));
  EXPECT_TRUE(contains(binding.header, "#define KA_INPUT_B 0"));
}

// One axis name for M, N and K: the names cannot say which input is A, nor how it is laid out;
// the operands op_params name (the recognizer writes them) can.
TEST(GemmBinder, NamedOperandsBindASquareProduct) {
  const Definition def = make_definition(
      {{"p", tensor({"N", "N"})}, {"q", tensor({"N", "N"})}},
      {{"a", "q"}, {"a_layout", "km"}, {"b", "p"}, {"b_layout", "kn"}}, tensor({"N", "N"}));
  const FamilyBinding binding = bind(def, nvrtc_template());
  EXPECT_EQ(binding.sizes.at("M"), "N");
  EXPECT_EQ(binding.sizes.at("K"), "N");
  EXPECT_EQ(binding.constants.at("A_K_MAJOR"), 0);
  EXPECT_EQ(binding.constants.at("B_K_MAJOR"), 0);
  EXPECT_TRUE(contains(binding.header, "#define KA_INPUT_A 1"));
  EXPECT_TRUE(contains(binding.header, "#define KA_INPUT_B 0"));
}

TEST(GemmBinder, RejectsNamedOperandsThatDoNotMultiplyIntoC) {
  const Definition def = make_definition(
      linear_inputs(), {{"a", "x"}, {"a_layout", "km"}, {"b", "w"}, {"b_layout", "nk"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "gemm_case: inputs: op_params make A x [M, K] and B w [N, K], which do not "
                       "multiply into C [M, N]"));
  const Definition half = make_definition(linear_inputs(), {{"a", "x"}, {"b", "w"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(half, nvrtc_template()); }),
                       "kernelarc.op_params.a_layout: missing: a, a_layout, b and b_layout come "
                       "together"));
  const Definition unknown = make_definition(
      linear_inputs(), {{"a", "x"}, {"a_layout", "mk"}, {"b", "v"}, {"b_layout", "nk"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(unknown, nvrtc_template()); }),
                       "kernelarc.op_params.b: no input is named \"v\""));
}

TEST(GemmBinder, ClassifiesABiasEpilogue) {
  OrderedJson inputs = linear_inputs();
  inputs["bias"] = tensor({"N"}, "float32");
  const FamilyBinding binding =
      bind(make_definition(inputs, {{"epilogue", "bias + acc"}}), nvrtc_template());
  EXPECT_EQ(binding.constants.at("EPILOGUE_KIND"), 1);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_BIAS_INPUT 2"));
  EXPECT_TRUE(contains(h, "typedef float ka_bias_t;"));
  EXPECT_TRUE(contains(h, "#define KA_CUDA_TYPE_BIAS CUDA_R_32F"));
  EXPECT_TRUE(contains(h, "ka_axis_K, ka_input_2, ka_input_2})"));
  EXPECT_TRUE(contains(h, "ka_to_float(in_bias[col + i])"));
}

TEST(GemmBinder, ClassifiesTanhGeluOfAccPlusBias) {
  OrderedJson inputs = linear_inputs();
  inputs["b"] = tensor({"N"});
  const FamilyBinding binding =
      bind(make_definition(inputs, {{"epilogue", "gelu_tanh((acc + b))"}}), nvrtc_template());
  EXPECT_EQ(binding.constants.at("EPILOGUE_KIND"), 5);
  EXPECT_EQ(binding.constants.at("BIAS_BYTES"), 2);
  EXPECT_TRUE(contains(binding.header, "#define KA_EPILOGUE_KIND 5"));
  EXPECT_TRUE(contains(binding.header, "#define KA_BIAS_INPUT 2"));
  // The erf GELU is not what a library's GELU epilogue computes.
  EXPECT_EQ(bind(make_definition(inputs, {{"epilogue", "gelu(acc + b)"}}), nvrtc_template())
                .constants.at("EPILOGUE_KIND"),
            6);
}

TEST(GemmBinder, ClassifiesReluOfAcc) {
  const FamilyBinding binding =
      bind(make_definition(linear_inputs(), {{"epilogue", "relu(acc)"}}), nvrtc_template());
  EXPECT_EQ(binding.constants.at("EPILOGUE_KIND"), 2);
}

TEST(GemmBinder, AnythingElseIsCustom) {
  OrderedJson inputs = linear_inputs();
  inputs["residual"] = tensor({"M", "N"});
  inputs["scale"] = {{"shape", nullptr}, {"dtype", "float32"}};
  const FamilyBinding binding =
      bind(make_definition(inputs, {{"epilogue", "acc * scale + residual"}}), nvrtc_template());
  EXPECT_EQ(binding.constants.at("EPILOGUE_KIND"), 6);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_BIAS_INPUT -1"));
  EXPECT_TRUE(contains(h, "ka_to_float(in_scale[0])"));
  EXPECT_TRUE(contains(h, "ka_to_float(in_residual[row * n + col + i])"));
  // A per-column input under a function other than relu/gelu is custom too.
  OrderedJson biased = linear_inputs();
  biased["bias"] = tensor({"N"});
  EXPECT_EQ(bind(make_definition(biased, {{"epilogue", "silu(acc + bias)"}}), nvrtc_template())
                .constants.at("EPILOGUE_KIND"),
            6);
}

TEST(GemmBinder, CpuEpilogueInputsBindThroughKaBind) {
  OrderedJson inputs = linear_inputs();
  inputs["bias"] = tensor({"N"});
  const std::string h =
      bind(make_definition(inputs, {{"epilogue", "acc + bias"}}), cpu_template()).header;
  EXPECT_TRUE(contains(h, "#include \"ka_cpu_types.h\""));
  EXPECT_TRUE(contains(h, "typedef ka_bf16 ka_a_t;"));
  EXPECT_TRUE(contains(h, "if (inputs[2].shape[0] != args->n)"));
  EXPECT_TRUE(contains(h, "args->bias = static_cast<const ka_bias_t*>(inputs[2].data);"));
}

TEST(GemmBinder, RejectsThreeMatrixInputs) {
  OrderedJson inputs = linear_inputs();
  inputs["x2"] = tensor({"M", "K"});
  EXPECT_TRUE(contains(input_error_of([&] { bind(make_definition(inputs), nvrtc_template()); }),
                       "inputs: expected two matrix inputs sharing a reduced axis K"));
}

TEST(GemmBinder, RejectsAMismatchedReducedAxis) {
  const Definition def = make_definition({{"x", tensor({"M", "K"})}, {"w", tensor({"N", "J"})}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "gemm_case: inputs: expected two matrix inputs sharing"));
}

TEST(GemmBinder, RejectsInt8) {
  const Definition def =
      make_definition({{"x", tensor({"M", "K"}, "int8")}, {"w", tensor({"N", "K"}, "int8")}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "inputs.x.dtype: expected float32, float16 or bfloat16, got int8"));
}

TEST(GemmBinder, RejectsMixedOperandDtypes) {
  const Definition def =
      make_definition({{"x", tensor({"M", "K"})}, {"w", tensor({"N", "K"}, "float16")}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "inputs.w.dtype: expected bfloat16 (the dtype of x), got float16"));
}

TEST(GemmBinder, RejectsAnEpilogueNamingAnUnknownInput) {
  const Definition def = make_definition(linear_inputs(), {{"epilogue", "acc + bias"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "kernelarc.op_params.epilogue: \"acc + bias\": at column 7: unknown "
                       "variable 'bias'"));
}

TEST(GemmBinder, RejectsAnInputTheEpilogueIgnores) {
  OrderedJson inputs = linear_inputs();
  inputs["bias"] = tensor({"N"});
  EXPECT_TRUE(contains(input_error_of([&] { bind(make_definition(inputs), nvrtc_template()); }),
                       "inputs.bias: a gemm input other than A and B must be used by "
                       "kernelarc.op_params.epilogue"));
}

TEST(GemmBinder, RejectsAnUnknownOpParam) {
  const Definition def = make_definition(linear_inputs(), {{"alpha", 2}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "kernelarc.op_params.alpha: unknown parameter for the gemm family"));
}

TEST(GemmBinder, RejectsAnEpilogueInputOfAnotherShape) {
  OrderedJson inputs = linear_inputs();
  inputs["rowscale"] = tensor({"M"});
  const Definition def = make_definition(inputs, {{"epilogue", "acc * rowscale"}});
  EXPECT_TRUE(contains(input_error_of([&] { bind(def, nvrtc_template()); }),
                       "inputs.rowscale.shape: expected [N] (per column), [M, N] or a scalar"));
}

}  // namespace
}  // namespace kernelarc
