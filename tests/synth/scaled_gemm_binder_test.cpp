// The scaled_gemm binder: the bundled FP8 problems bind with the scale kinds, sizes and constants
// the templates read; the generated ka_bind checks the tensors and the block counts (compiled
// and run on the host); definitions the templates cannot serve are rejected naming the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "source_dir.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;
using testing::input_error_of;

const std::string kProblems = std::string(KERNELARC_SOURCE_DIR) + "/problems/";

KernelTemplate scaled_template(const std::string& target = "cuda",
                               TemplateBuild build = TemplateBuild::SharedObject) {
  return testing::stub_template("scaled_gemm_test", {"scaled_gemm"}, target, build);
}

FamilyBinding bind(const Definition& def, const KernelTemplate& kernel = scaled_template()) {
  return make_scaled_gemm_binder()->bind(def, kernel);
}

OrderedJson tensor(const OrderedJson& shape, const std::string& dtype) {
  return {{"shape", shape}, {"dtype", dtype}};
}

OrderedJson fp8(const std::vector<std::string>& shape) {
  return tensor(shape, "float8_e4m3fn");
}

OrderedJson f32(const OrderedJson& shape) {
  return tensor(shape, "float32");
}

/// A scaled_gemm definition over M (var), N = 300, K = 200, KB = ceil(K / 128), NB, MB and a
/// const ONE = 1.
Definition make_definition(const OrderedJson& inputs, const OrderedJson& op_params,
                           const OrderedJson& output = tensor({"M", "N"}, "bfloat16")) {
  std::string params;
  for (const auto& [name, spec] : inputs.items()) params += (params.empty() ? "" : ", ") + name;
  OrderedJson json = {{"name", "scaled_case"},
                      {"axes",
                       {{"M", {{"type", "var"}}},
                        {"N", {{"type", "const"}, {"value", 300}}},
                        {"K", {{"type", "const"}, {"value", 200}}},
                        {"KB", {{"type", "expr"}, {"expression", "(K + 127) // 128"}}},
                        {"NB", {{"type", "expr"}, {"expression", "(N + 127) // 128"}}},
                        {"MB", {{"type", "expr"}, {"expression", "(M + 127) // 128"}}},
                        {"KQ", {{"type", "expr"}, {"expression", "K // 128"}}},
                        {"ONE", {{"type", "const"}, {"value", 1}}}}},
                      {"inputs", inputs},
                      {"outputs", {{"out", output}}},
                      {"reference", "def run(" + params + "):\n    return None\n"},
                      {"kernelarc", {{"op_family", "scaled_gemm"}, {"op_params", op_params}}}};
  return parse_definition(json, "scaled_case.json");
}

OrderedJson inputs_with(const OrderedJson& a_scale, const OrderedJson& b_scale) {
  return {{"x", fp8({"M", "K"})}, {"w", fp8({"N", "K"})}, {"sx", a_scale}, {"sw", b_scale}};
}

OrderedJson params(const std::string& a, const std::string& b) {
  return {{"scale_a", a}, {"scale_b", b}};
}

TEST(ScaledGemmBinder, ServesScaledGemm) {
  EXPECT_EQ(make_scaled_gemm_binder()->families(), std::vector<std::string>{"scaled_gemm"});
  EXPECT_NE(find_family_binder("scaled_gemm"), nullptr);
}

TEST(ScaledGemmBinder, BindsTheRowwiseProblem) {
  const FamilyBinding binding =
      bind(load_definition(kProblems + "cuda/fp8_gemm_rowwise_bf16_n7168_k2048/definition.json"));
  EXPECT_EQ(binding.sizes.at("M"), "M");
  EXPECT_EQ(binding.sizes.at("N"), "N");
  EXPECT_EQ(binding.sizes.at("K"), "K");
  EXPECT_EQ(binding.constants.at("SCALE_A_KIND"), 1);
  EXPECT_EQ(binding.constants.at("SCALE_B_KIND"), 1);
  EXPECT_EQ(binding.constants.at("SCALE_BLOCKED"), 0);
  EXPECT_EQ(binding.constants.at("C_BYTES"), 2);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_TARGET_CUDA 1"));
  EXPECT_TRUE(contains(h, "typedef unsigned char ka_e4m3_t;"));
  EXPECT_TRUE(contains(h, "typedef __nv_bfloat16 ka_c_t;"));
  EXPECT_TRUE(contains(h, "#define KA_CUDA_TYPE_C CUDA_R_16BF"));
  EXPECT_TRUE(contains(h, "#define KA_SCALE_A_KIND 1  // per_row"));
  EXPECT_TRUE(contains(h, "#define KA_SCALE_B_KIND 1  // per_column"));
  EXPECT_TRUE(contains(h, "#define KA_SCALE_BLOCKED 0"));
  EXPECT_TRUE(contains(h, "(void)kb;\n    return scale_a[row];"));
  EXPECT_TRUE(contains(h, "if (inputs[0].dtype != KA_FLOAT8_E4M3FN)"));
  EXPECT_TRUE(contains(h, "args->scale_b = static_cast<const float*>(inputs[3].data);"));
  EXPECT_FALSE(contains(h, "KA_KERNEL_PARAMS"));
}

TEST(ScaledGemmBinder, BindsTheBlockScaledProblem) {
  const FamilyBinding binding = bind(
      load_definition(kProblems + "cuda/fp8_gemm_blockscale_bf16_n7168_k2048/definition.json"));
  EXPECT_EQ(binding.constants.at("SCALE_A_KIND"), 2);
  EXPECT_EQ(binding.constants.at("SCALE_B_KIND"), 3);
  EXPECT_EQ(binding.constants.at("SCALE_BLOCKED"), 1);
  const std::string& h = binding.header;
  EXPECT_TRUE(contains(h, "#define KA_SCALE_BLOCKED 1"));
  EXPECT_TRUE(contains(h, "return scale_a[row * k_blocks + kb];"));
  EXPECT_TRUE(contains(h, "return scale_b[(row / 128) * k_blocks + kb];"));
  EXPECT_TRUE(contains(h, "if (inputs[2].shape[1] != k_blocks)"));
  EXPECT_TRUE(contains(h,
                       "if (inputs[3].shape[0] != (n + 127) / 128 || inputs[3].shape[1] != "
                       "k_blocks)"));
}

TEST(ScaledGemmBinder, TakesEveryScaleKindOnEitherSide) {
  const Definition def = make_definition(inputs_with(f32(nullptr), f32({"NB", "KB"})),
                                         params("per_tensor", "block_128x128"));
  EXPECT_EQ(bind(def).constants.at("SCALE_A_KIND"), 0);
  EXPECT_TRUE(contains(bind(def).header, "(void)row;\n    (void)kb;\n    return scale_a[0];"));
  EXPECT_EQ(bind(make_definition(inputs_with(f32({"ONE"}), f32({"N", "KB"})),
                                 params("per_tensor", "block_1x128")))
                .constants.at("SCALE_B_KIND"),
            2);
  EXPECT_EQ(bind(make_definition(inputs_with(f32({"MB", "KB"}), f32(std::vector<std::string>{})),
                                 params("block_128x128", "per_tensor")))
                .constants.at("SCALE_A_KIND"),
            3);
  // Float32 output.
  EXPECT_EQ(bind(make_definition(inputs_with(f32({"M"}), f32({"N"})),
                                 params("per_row", "per_column"), tensor({"M", "N"}, "float32")))
                .constants.at("C_BYTES"),
            4);
}

TEST(ScaledGemmBinder, RejectsWhatTheTemplatesCannotServe) {
  const auto error = [](const OrderedJson& inputs, const OrderedJson& p) {
    return input_error_of([&] { bind(make_definition(inputs, p)); });
  };
  const OrderedJson rowwise = inputs_with(f32({"M"}), f32({"N"}));
  EXPECT_TRUE(contains(error(rowwise, {{"scale_a", "per_row"}}),
                       "scaled_case: kernelarc.op_params.scale_b: required"));
  EXPECT_TRUE(contains(error(rowwise, params("per_column", "per_column")),
                       "kernelarc.op_params.scale_a: expected one of \"per_tensor\", \"per_row\""));
  EXPECT_TRUE(
      contains(error(rowwise, {{"scale_a", "per_row"}, {"scale_b", "per_column"}, {"x", 1}}),
               "kernelarc.op_params.x: unknown parameter"));
  EXPECT_TRUE(contains(error(inputs_with(f32({"N"}), f32({"N"})), params("per_row", "per_column")),
                       "inputs.sx.shape: expected [M] for a per_row scale of x, got [N]"));
  EXPECT_TRUE(contains(
      error(inputs_with(tensor({"M"}, "bfloat16"), f32({"N"})), params("per_row", "per_column")),
      "inputs.sx.dtype: expected float32"));
  EXPECT_TRUE(
      contains(error(inputs_with(f32({"M"}), f32({"N"})), params("per_tensor", "per_column")),
               "inputs.sx.shape: expected null, [] or [one]"));
  // A block axis that is not ceil(K / 128): K // 128 floors.
  EXPECT_TRUE(contains(error(inputs_with(f32({"M", "KQ"}), f32({"NB", "KB"})),
                             params("block_1x128", "block_128x128")),
                       "inputs.sx.shape: expected an axis equal to ceil(K / 128)"));
  EXPECT_TRUE(contains(error(inputs_with(f32({"M", "KB"}), f32({"N", "KB"})),
                             params("block_1x128", "block_128x128")),
                       "inputs.sw.shape: expected an axis equal to ceil(N / 128)"));
  // A var row axis: MB is an expression of M alone, so it is checked at sample sizes.
  EXPECT_EQ(error(inputs_with(f32({"MB", "K"}), f32({"N"})), params("block_128x128", "per_column"))
                    .find("inputs.sx.shape: expected an axis equal to ceil(K / 128)") !=
                std::string::npos,
            true);
  // Operands.
  OrderedJson e5 = rowwise;
  e5["w"] = tensor({"N", "K"}, "float8_e5m2");
  EXPECT_TRUE(contains(error(e5, params("per_row", "per_column")),
                       "inputs.w.dtype: expected float8_e4m3fn"));
  OrderedJson transposed = rowwise;
  transposed["x"] = fp8({"K", "M"});
  EXPECT_TRUE(contains(error(transposed, params("per_row", "per_column")),
                       "inputs.x.shape: expected A [M, K] and B [N, K]"));
  OrderedJson three = rowwise;
  three.erase("sw");
  EXPECT_TRUE(
      contains(error(three, params("per_row", "per_column")), "inputs: expected four inputs"));
  // NVRTC and CPU templates get no header from this binder.
  const Definition def = make_definition(rowwise, params("per_row", "per_column"));
  EXPECT_TRUE(
      contains(input_error_of([&] { bind(def, scaled_template("cuda", TemplateBuild::Nvrtc)); }),
               "kernelarc.op_family: the scaled_gemm binder generates headers for CUDA "
               "shared objects"));
  EXPECT_TRUE(contains(
      input_error_of([&] { bind(def, scaled_template("cpu", TemplateBuild::SharedObject)); }),
      "kernelarc.op_family"));
}

// The block-scaled header compiled as host code (the CUDA include dir gives cuda_bf16.h): ka_bind
// fills the sizes, the accessors index the scales, and a wrong block count is refused.
TEST(ScaledGemmBinder, TheGeneratedBindChecksTheBlocks) {
  const Definition def = make_definition(inputs_with(f32({"M", "KB"}), f32({"NB", "KB"})),
                                         params("block_1x128", "block_128x128"));
  if (std::system("test -f /usr/local/cuda/include/cuda_bf16.h") != 0)
    GTEST_SKIP() << "no CUDA headers at /usr/local/cuda/include";
  const std::string output = testing::run_header_driver(bind(def).header, R"(
int main() {
  static unsigned char x[5 * 200], w[300 * 200];
  static float sx[5 * 2], sw[3 * 2];
  static __nv_bfloat16 out[5 * 300];
  for (int i = 0; i < 10; ++i) sx[i] = static_cast<float>(i);
  for (int i = 0; i < 6; ++i) sw[i] = 100.0f + i;
  ka_tensor in[] = {make(x, KA_FLOAT8_E4M3FN, {5, 200}), make(w, KA_FLOAT8_E4M3FN, {300, 200}),
                    make(sx, KA_FLOAT32, {5, 2}), make(sw, KA_FLOAT32, {3, 2})};
  ka_tensor o[] = {make(out, KA_BFLOAT16, {5, 300})};
  KaArgs ka;
  if (const char* e = ka_bind(in, 4, o, 1, &ka)) return std::printf("bind: %s\n", e), 1;
  std::printf("m %lld n %lld k %lld blocks %lld\n", ka.m, ka.n, ka.k, ka.k_blocks);
  std::printf("a_scale(3, 1) %g b_scale(299, 1) %g b_scale(127, 0) %g\n", ka.a_scale(3, 1),
              ka.b_scale(299, 1), ka.b_scale(127, 0));
  in[2] = make(sx, KA_FLOAT32, {5, 1});
  const char* e = ka_bind(in, 4, o, 1, &ka);
  std::printf("x scale: %s\n", e ? e : "none");
  in[2] = make(sx, KA_FLOAT32, {5, 2});
  in[3] = make(sw, KA_FLOAT32, {2, 2});
  e = ka_bind(in, 4, o, 1, &ka);
  std::printf("w scale: %s\n", e ? e : "none");
  return 0;
}
)",
                                                        "-I/usr/local/cuda/include");
  EXPECT_EQ(output,
            "m 5 n 300 k 200 blocks 2\n"
            "a_scale(3, 1) 7 b_scale(299, 1) 105 b_scale(127, 0) 100\n"
            "x scale: sx: expected ceil(K / 128) columns\n"
            "w scale: sw: expected shape [ceil(rows / 128), ceil(K / 128)]\n");
}

}  // namespace
}  // namespace kernelarc
