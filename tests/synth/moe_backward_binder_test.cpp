// The moe_backward binder: the routing, the hidden states and the output's gradient, the weights
// and one gradient per differentiated tensor are told apart by shape and dtype (names where
// shapes tie), the generated accessors and the activation's derivative give what a hand
// computation says (compiled and run on the CPU), and definitions the family cannot serve are
// rejected naming the field. On CUDA the header checks the 16-byte alignment of every row the
// template copies, and the library's CUDA template serves the bfloat16 model layers and only them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "core/expr.h"
#include "core/problem.h"
#include "synth/bound_template.h"
#include "synth/family.h"
#include "synth/family_moe_backward.h"
#include "synth/family_support.h"
#include "synth/kernel_template.h"

namespace kernelarc {
namespace {

using testing::contains;
using testing::input_error_of;

KernelTemplate backward_template() {
  return testing::stub_template("moe_backward_test", {"moe_backward"}, "cpu",
                                TemplateBuild::SharedObject);
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

/// `tensors` with every float32 tensor but the routing weights and their gradient in `dtype`.
OrderedJson with_dtype(OrderedJson tensors, const std::string& dtype) {
  for (auto& [name, spec] : tensors.items())
    if (spec["dtype"] == "float32" && name.find("weights") == std::string::npos)
      spec["dtype"] = dtype;
  return tensors;
}

/// 4 experts, top 2, hidden 6, intermediate 3 (I != H, so shapes decide the weights).
Definition backward_definition(const OrderedJson& inputs, const OrderedJson& outputs,
                               const OrderedJson& op_params = OrderedJson::object()) {
  std::string parameters;
  for (const auto& [input, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + input;
  OrderedJson json = {{"name", "moe_backward_case"},
                      {"op_type", "moe_backward"},
                      {"axes",
                       {{"T", {{"type", "var"}}},
                        {"K", {{"type", "const"}, {"value", 2}}},
                        {"E", {{"type", "const"}, {"value", 4}}},
                        {"H", {{"type", "const"}, {"value", 6}}},
                        {"I", {{"type", "const"}, {"value", 3}}},
                        {"I2", {{"type", "const"}, {"value", 6}}}}},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"reference", "def run(" + parameters + "):\n    pass\n"},
                      {"kernelarc", {{"op_family", "moe_backward"}, {"op_params", op_params}}}};
  return parse_definition(json, "moe_backward_case.json");
}

// The output's gradient first, named so: the name, not the order, tells it from x.
const OrderedJson kFusedInputs = {
    {"dy", tensor({"T", "H"})},        {"x", tensor({"T", "H"})},
    {"weights", tensor({"T", "K"})},   {"ids", tensor({"T", "K"}, "int64")},
    {"w13", tensor({"E", "I2", "H"})}, {"w2", tensor({"E", "H", "I"})}};
const OrderedJson kFusedOutputs = {{"dw2", tensor({"E", "H", "I"})},
                                   {"dx", tensor({"T", "H"})},
                                   {"d_weights", tensor({"T", "K"})},
                                   {"dw13", tensor({"E", "I2", "H"})}};

const OrderedJson kSeparateInputs = {
    {"hidden", tensor({"T", "H"})},         {"topk_ids", tensor({"T", "K"}, "int32")},
    {"topk_weights", tensor({"T", "K"})},   {"up_proj", tensor({"E", "I", "H"})},
    {"gate_proj", tensor({"E", "I", "H"})}, {"down_proj", tensor({"E", "H", "I"})},
    {"grad_out", tensor({"T", "H"})}};
const OrderedJson kSeparateOutputs = {{"grad_hidden", tensor({"T", "H"})},
                                      {"grad_gate_proj", tensor({"E", "I", "H"})},
                                      {"grad_up_proj", tensor({"E", "I", "H"})},
                                      {"grad_down_proj", tensor({"E", "H", "I"})}};

TEST(MoeBackwardBinder, FindsEveryTensorByShapeDtypeAndName) {
  // The problem points into its definition, which must outlive it.
  const Definition fused_def = backward_definition(kFusedInputs, kFusedOutputs);
  const MoeBackwardProblem fused = read_moe_backward_problem(fused_def);
  EXPECT_EQ(fused.hidden.spec->name, "x");
  EXPECT_EQ(fused.grad_output.spec->name, "dy");
  EXPECT_EQ(fused.topk_ids.spec->name, "ids");
  EXPECT_EQ(fused.topk_weights.spec->name, "weights");
  EXPECT_EQ(fused.w13.spec->name, "w13");
  EXPECT_EQ(fused.grad_hidden.spec->name, "dx");
  EXPECT_EQ(fused.grad_w13.spec->name, "dw13");
  EXPECT_EQ(fused.grad_down.spec->name, "dw2");
  EXPECT_EQ(fused.grad_topk_weights.spec->name, "d_weights");
  EXPECT_EQ(fused.top_k, 2);
  EXPECT_EQ(fused.experts, 4);
  EXPECT_EQ(fused.inter, 3);

  const Definition apart_def =
      backward_definition(kSeparateInputs, kSeparateOutputs, {{"activation", "gelu"}});
  const MoeBackwardProblem apart = read_moe_backward_problem(apart_def);
  EXPECT_EQ(apart.hidden.spec->name, "hidden");
  EXPECT_EQ(apart.grad_output.spec->name, "grad_out");
  EXPECT_EQ(apart.w_gate.spec->name, "gate_proj");
  EXPECT_EQ(apart.w_up.spec->name, "up_proj");
  // Same shapes: the names tie each gradient to its weight.
  EXPECT_EQ(apart.grad_gate.spec->name, "grad_gate_proj");
  EXPECT_EQ(apart.grad_up.spec->name, "grad_up_proj");
  EXPECT_FALSE(apart.grad_topk_weights);
  EXPECT_EQ(apart.activation, MoeActivation::Gelu);
}

// The header's accessors over a fused gate-and-up weight (up rows first) and its gradient, the
// routing accessors, and the derivative of SiLU against a difference quotient.
TEST(MoeBackwardBinder, HeaderAddressesEveryTensorAndDifferentiatesTheActivation) {
  const Definition def =
      backward_definition(kFusedInputs, kFusedOutputs, {{"gate_up_order", "up_gate"}});
  const FamilyBinding b = make_moe_backward_binder()->bind(def, backward_template());
  EXPECT_EQ(b.sizes.at("TOKENS"), "T");
  EXPECT_EQ(b.constants.at("TOP_K"), 2);
  EXPECT_TRUE(contains(b.header, "#define KA_HAS_GRAD_ROUTING 1"));
  const std::string output = testing::run_header_driver(b.header, R"(
#include <cmath>
int main() {
  static float dy[3 * 6], x[3 * 6], w[3 * 2], w13[4 * 6 * 6], w2[4 * 6 * 3];
  static float dw2[4 * 6 * 3], dx[3 * 6], dw[3 * 2], dw13[4 * 6 * 6];
  static long long ids[3 * 2] = {0, 3, 2, 1, 9, 0};
  w[5] = 0.25f;
  ka_tensor in[6] = {make(dy, KA_FLOAT32, {3, 6}), make(x, KA_FLOAT32, {3, 6}),
                     make(w, KA_FLOAT32, {3, 2}), make(ids, KA_INT64, {3, 2}),
                     make(w13, KA_FLOAT32, {4, 6, 6}), make(w2, KA_FLOAT32, {4, 6, 3})};
  ka_tensor o[4] = {make(dw2, KA_FLOAT32, {4, 6, 3}), make(dx, KA_FLOAT32, {3, 6}),
                    make(dw, KA_FLOAT32, {3, 2}), make(dw13, KA_FLOAT32, {4, 6, 6})};
  KaArgs ka;
  if (const char* error = ka_bind(in, 6, o, 4, &ka)) { std::printf("bind: %s\n", error); return 1; }
  ka.set_route_grad(2, 1, 7.0f);
  std::printf("tokens %lld expert %lld weight %.2f gate %ld up %ld dgate %ld dup %ld ddown %ld "
              "dx %ld dy %ld droute %.1f\n",
              ka.tokens(), ka.expert(2, 0), ka.route_weight(2, 1), (long)(ka.gate_rows(2) - w13),
              (long)(ka.up_rows(2) - w13), (long)(ka.dgate_rows(2) - dw13),
              (long)(ka.dup_rows(2) - dw13), (long)(ka.ddown_rows(3) - dw2), (long)(ka.dx_row(1) - dx),
              (long)(ka.dy_row(2) - dy), dw[5]);
  const float g = 0.7f, h = 1e-3f;
  const float quotient = (ka_moe_activation(g + h) - ka_moe_activation(g - h)) / (2 * h);
  std::printf("derivative %.4f quotient %.4f\n", ka_moe_activation_grad(g), quotient);
  return 0;
}
)");
  // Expert 2's 6 gate-and-up rows of 6 start at 72; up first, so the gate rows are the second 3.
  EXPECT_TRUE(contains(output,
                       "tokens 3 expert 9 weight 0.25 gate 90 up 72 dgate 90 dup 72 ddown 54 dx 6 "
                       "dy 12 droute 7.0"))
      << output;
  // silu'(0.7) = s (1 + 0.7 (1 - s)), s = sigmoid(0.7) = 0.66819: 0.82337.
  EXPECT_TRUE(contains(output, "derivative 0.8234 quotient 0.823")) << output;
}

TEST(MoeBackwardBinder, RejectsWhatTheFamilyCannotServeNamingTheField) {
  OrderedJson no_ids = kFusedInputs;
  no_ids["ids"] = tensor({"T", "K"});  // float: two [T, K] float inputs, no ids
  EXPECT_TRUE(contains(input_error_of([&] {
                         read_moe_backward_problem(backward_definition(no_ids, kFusedOutputs));
                       }),
                       "expected the chosen experts' ids"));
  OrderedJson no_down_grad = kFusedOutputs;
  no_down_grad.erase("dw2");
  EXPECT_TRUE(contains(input_error_of([&] {
                         read_moe_backward_problem(backward_definition(kFusedInputs, no_down_grad));
                       }),
                       "outputs: expected the gradient of w2 (the down projection)"));
  OrderedJson extra = kFusedOutputs;
  extra["loss"] = tensor({"T", "H"});
  EXPECT_TRUE(contains(
      input_error_of([&] { read_moe_backward_problem(backward_definition(kFusedInputs, extra)); }),
      "outputs.loss: not a gradient this family computes"));
  OrderedJson half_grad = kFusedOutputs;
  half_grad["dw13"] = tensor({"E", "I2", "H"}, "float16");
  EXPECT_TRUE(contains(input_error_of([&] {
                         read_moe_backward_problem(backward_definition(kFusedInputs, half_grad));
                       }),
                       "outputs.dw13.dtype: expected float32 or the dtype of w13"));
  EXPECT_TRUE(contains(
      input_error_of([&] {
        read_moe_backward_problem(backward_definition(kFusedInputs, kFusedOutputs, {{"top_k", 2}}));
      }),
      "kernelarc.op_params.top_k: unknown field"));
}

// On CUDA the template copies rows in 16-byte units: the header refuses misaligned hidden states,
// output gradient, weights and gradients (not the routing, which is read element by element),
// and names the device's 16-bit types.
TEST(MoeBackwardBinder, CudaHeaderChecksRowAlignmentAndNamesDeviceTypes) {
  const Definition def = backward_definition(with_dtype(kFusedInputs, "bfloat16"),
                                             with_dtype(kFusedOutputs, "bfloat16"));
  const FamilyBinding cuda = make_moe_backward_binder()->bind(
      def, testing::stub_template("moe_backward_cuda_test", {"moe_backward"}, "cuda",
                                  TemplateBuild::SharedObject));
  EXPECT_EQ(cuda.constants.at("ELEM_BYTES"), 2);
  EXPECT_EQ(cuda.constants.at("W_BYTES"), 2);
  for (const char* line : {"typedef __nv_bfloat16 ka_act_t;", "typedef __nv_bfloat16 ka_w_t;",
                           "typedef __nv_bfloat16 ka_wgrad_t;", "typedef long long ka_id_t;",
                           "typedef float ka_route_grad_t;"})
    EXPECT_TRUE(contains(cuda.header, line)) << line << "\n" << cuda.header;
  for (const char* name : {"x", "dy", "w13", "w2", "dx", "dw13", "dw2"})
    EXPECT_TRUE(contains(cuda.header, std::string(name) + ": expected 16-byte aligned data"))
        << name;
  for (const char* name : {"ids", "weights", "d_weights"})
    EXPECT_FALSE(contains(cuda.header, std::string(name) + ": expected 16-byte aligned data"))
        << name;
  const FamilyBinding cpu = make_moe_backward_binder()->bind(def, backward_template());
  EXPECT_FALSE(contains(cpu.header, "16-byte aligned")) << cpu.header;
}

/// The CUDA match of the library's moe_backward template for the problem in `dir`.
TemplateMatch cuda_match(const std::vector<KernelTemplate>& library, const Problem& problem) {
  for (TemplateMatch& match : match_templates(library, problem, DeviceKind::Cuda))
    if (match.kernel->name == "moe_backward") return std::move(match);
  ADD_FAILURE() << "moe_backward is not listed for " << problem.definition.name;
  return {};
}

// The bundled bfloat16 layers bind at the default point, whose workspace covers the arrays
// kernel.cu lays out at the largest token count; the float32 problems are refused by the
// template's constraints, naming the one that fails.
TEST(MoeBackwardBinder, LibraryCudaTemplateServesTheBf16LayersOnly) {
  const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  int served = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "problems" / "cuda")) {
    if (entry.path().filename().string().rfind("moe_backward_", 0) != 0) continue;
    const Problem problem = load_problem(entry.path());
    const TemplateMatch match = cuda_match(library, problem);
    ASSERT_TRUE(match.bound) << problem.definition.name << ": " << match.reason;
    const Solution solution =
        match.bound->instantiate(match.bound->space().space().default_point());
    const AxisValues axes = static_axes(problem.definition);
    const auto value = [&](const char* axis) { return axes.at(axis); };
    const int64_t tokens = 4096, slots = tokens * value("top_k");
    const int64_t hidden = value("hidden_size"), inter = value("intermediate_size");
    // dg, du, w h as bfloat16 hi + lo pairs and the float32 dx rows per slot: the bulk of
    // kernel.cu's layout.
    const int64_t bulk = slots * (6 * inter * 2 + hidden * 4);
    const int64_t workspace = evaluate_expr(solution.ext.at("workspace_bytes").get<std::string>(),
                                            {{"num_tokens", tokens}});
    EXPECT_GT(workspace, bulk) << problem.definition.name;
    EXPECT_LT(workspace, bulk + slots * (20 + (inter / 32 + 1) * 4) + 65536)
        << problem.definition.name;
    ++served;
  }
  EXPECT_GE(served, 3);
  const Problem f32 = load_problem(kSource / "problems/cpu/moe_backward_swiglu_f32");
  const TemplateMatch refused = cuda_match(library, f32);
  EXPECT_FALSE(refused.bound);
  EXPECT_TRUE(contains(refused.reason, "ELEM_BYTES == 2")) << refused.reason;
}

}  // namespace
}  // namespace kernelarc
