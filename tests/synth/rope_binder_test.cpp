// The rope binder: the built-in NeoX RoPE problem binds to a header that addresses every rotated
// tensor's heads in turn, and definitions the template cannot serve are rejected naming the field.
#include <gtest/gtest.h>

#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/family.h"

namespace kernelarc {
namespace {

using testing::contains;

using testing::input_error_of;

KernelTemplate rope_template(const std::string& target = "cuda",
                             TemplateBuild build = TemplateBuild::Nvrtc) {
  return testing::stub_template("rope_test", {"rope"}, target, build);
}

/// A rope definition over [T, H, D] with D = 2 * R: `inputs` and `outputs` as JSON.
Definition make_definition(const OrderedJson& inputs, const OrderedJson& outputs,
                           const OrderedJson& op_params = {{"style", "neox"}}, int64_t half = 32) {
  std::string parameters;
  for (const auto& [name, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + name;
  OrderedJson json = {{"name", "rope_case"},
                      {"op_type", "rope"},
                      {"axes",
                       {{"T", {{"type", "var"}}},
                        {"H", {{"type", "const"}, {"value", 4}}},
                        {"D", {{"type", "const"}, {"value", 64}}},
                        {"R", {{"type", "const"}, {"value", half}}}}},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"reference", "def run(" + parameters + "):\n    pass\n"},
                      {"kernelarc", {{"op_family", "rope"}, {"op_params", op_params}}}};
  return parse_definition(json, "rope_case.json");
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "bfloat16") {
  return {{"shape", shape}, {"dtype", dtype}};
}

const OrderedJson kInputs = {{"x", tensor({"T", "H", "D"})},
                             {"cos", tensor({"T", "R"}, "float32")},
                             {"sin", tensor({"T", "R"}, "float32")}};
const OrderedJson kOutputs = {{"y", tensor({"T", "H", "D"})}};

TEST(RopeBinder, BindsTheBuiltInProblemHeadByHead) {
  const Definition def =
      load_definition(std::string(KERNELARC_SOURCE_DIR) +
                      "/problems/cuda/rope_neox_bf16_q32_kv8_d128/definition.json");
  const FamilyBinding binding = make_rope_binder()->bind(def, rope_template());
  const std::string& h = binding.header;
  EXPECT_EQ(binding.sizes.at("TOKENS"), "num_tokens");
  EXPECT_EQ(binding.constants.at("HEAD_DIM"), 128);
  EXPECT_EQ(binding.constants.at("ROTARY_HALF"), 64);
  EXPECT_TRUE(contains(h, "#define KA_ROTARY_HALF 64"));
  EXPECT_TRUE(contains(h, "return heads_q + heads_k;"));
  // A head past the queries' is a key head.
  EXPECT_TRUE(contains(h, "if (head < heads_q) { ka_row_load<N>(in_q + at, v); return; }"));
  EXPECT_TRUE(contains(h, "head -= heads_q;"));
  EXPECT_TRUE(contains(h, "ka_row_store<N>(out_k_out + at, v);"));
  EXPECT_TRUE(contains(h, "ka_row_load<N>(cos_ + token * KA_ROTARY_HALF + col, v);"));
  EXPECT_TRUE(contains(h,
                       "KaArgs{ka_in_q, ka_out_q_out, ka_axis_num_q_heads, ka_in_k, "
                       "ka_out_k_out, ka_axis_num_kv_heads, ka_in_cos, ka_in_sin, "
                       "ka_axis_num_tokens}"));
}

TEST(RopeBinder, RejectsWhatTheTemplateCannotServe) {
  const auto error = [](const Definition& def, const KernelTemplate& kernel = rope_template()) {
    return input_error_of([&] { make_rope_binder()->bind(def, kernel); });
  };
  EXPECT_TRUE(contains(error(make_definition(kInputs, kOutputs, {{"style", "gptj"}})),
                       "kernelarc.op_params.style: the rope templates rotate the NeoX layout"));
  EXPECT_TRUE(contains(error(make_definition(kInputs, kOutputs, {{"base", 10000}})),
                       "kernelarc.op_params.base: unknown field"));
  EXPECT_TRUE(contains(
      error(make_definition({{"x", tensor({"T", "H", "D"})}, {"c", tensor({"T", "R"})}}, kOutputs)),
      "inputs: expected inputs named cos and sin"));
  EXPECT_TRUE(contains(error(make_definition(kInputs, kOutputs, {{"style", "neox"}}, 16)),
                       "inputs.cos: expected half the head dimension (64) as its width, got 16"));
  EXPECT_TRUE(contains(error(make_definition(kInputs, {{"y", tensor({"T", "H", "D"})},
                                                       {"z", tensor({"T", "H", "D"})}})),
                       "outputs: expected 1 outputs, one per rotated input"));
  EXPECT_TRUE(contains(error(make_definition(kInputs, {{"y", tensor({"T", "D"})}})),
                       "outputs.y: expected the shape of x, [T, H, D]"));
  EXPECT_TRUE(contains(error(make_definition({{"x", tensor({"T", "D"})},
                                              {"cos", tensor({"T", "R"}, "float32")},
                                              {"sin", tensor({"T", "R"}, "float32")}},
                                             kOutputs)),
                       "inputs.x: expected shape [T, heads, head_dim]"));
  EXPECT_TRUE(contains(error(make_definition(kInputs, {{"y", tensor({"T", "H", "D"}, "int32")}})),
                       "outputs.y.dtype: expected float32, float16 or bfloat16, got int32"));
  EXPECT_TRUE(contains(
      error(make_definition(kInputs, kOutputs), rope_template("cpu", TemplateBuild::SharedObject)),
      "kernelarc.op_family: the rope binder generates headers for CUDA kernels"));
}

}  // namespace
}  // namespace kernelarc
