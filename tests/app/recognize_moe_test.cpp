// Recognition of unannotated mixture-of-experts definitions by their tensors, with the routing
// rule read from the reference's text, and what is not recognised.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "../core/moe_fp8_fixture.h"
#include "app/recognize_moe.h"
#include "core/problem.h"

namespace kernelarc {
namespace {

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

/// An unannotated definition: 8 experts, hidden 16, intermediate 8.
Definition moe_definition(const OrderedJson& inputs, const std::string& reference,
                          const std::string& name) {
  std::string parameters;
  for (const auto& [input, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + input;
  OrderedJson json = {
      {"name", name},
      {"op_type", ""},
      {"axes",
       {{"T", {{"type", "var"}}},
        {"E", {{"type", "const"}, {"value", 8}}},
        {"H", {{"type", "const"}, {"value", 16}}},
        {"I", {{"type", "const"}, {"value", 8}}},
        {"I2", {{"type", "const"}, {"value", 16}}}}},
      {"inputs", inputs},
      {"outputs", {{"output", tensor({"T", "H"})}}},
      {"reference", reference.empty() ? "def run(" + parameters + "):\n    pass\n" : reference}};
  return parse_definition(json, "moe_case.json");
}

const OrderedJson kFusedInputs = {{"hidden_states", tensor({"T", "H"})},
                                  {"router_logits", tensor({"T", "E"})},
                                  {"e_score_correction_bias", tensor({"E"})},
                                  {"w13", tensor({"E", "I2", "H"})},
                                  {"w2", tensor({"E", "H", "I"})}};

const OrderedJson kSeparateInputs = {{"x", tensor({"T", "H"})},
                                     {"gate_weight", tensor({"E", "H"})},
                                     {"up_proj", tensor({"E", "I", "H"})},
                                     {"gate_proj", tensor({"E", "I", "H"})},
                                     {"down_proj", tensor({"E", "H", "I"})}};

TEST(MoeRecognition, ReadsTheRoutingRuleFromTheReference) {
  const std::string reference = R"(import torch
TOP_K = 3
def run(hidden_states, router_logits, e_score_correction_bias, w13, w2):
    scores = torch.sigmoid(router_logits.float())
    n_group = 4
    topk_group = 2
    routed_scaling_factor = 2.5
    _, ids = torch.topk(scores + e_score_correction_bias, TOP_K, dim=-1)
    w = scores.gather(1, ids)
    w = w / w.sum(dim=-1, keepdim=True)
    return hidden_states
)";
  const auto signature =
      match_moe_signature(moe_definition(kFusedInputs, reference, "deepseek_moe_layer"));
  ASSERT_TRUE(signature.has_value());
  const OrderedJson& params = signature->match.op_params;
  EXPECT_EQ(params.at("top_k"), 3);
  EXPECT_EQ(params.at("scoring"), "sigmoid");
  EXPECT_EQ(params.at("renormalize"), true);
  EXPECT_EQ(params.at("n_group"), 4);
  EXPECT_EQ(params.at("topk_group"), 2);
  EXPECT_EQ(params.at("routed_scaling_factor"), 2.5);
  EXPECT_FALSE(params.contains("activation"));
  EXPECT_EQ(signature->flops, "6 * T * 3 * 16 * 8");

  // No top_k anywhere: not recognised; not named like an MoE: not tried.
  EXPECT_FALSE(match_moe_signature(moe_definition(kSeparateInputs, "", "moe_layer")));
  EXPECT_FALSE(match_moe_signature(moe_definition(kSeparateInputs, "", "mlp_top2")));
  const auto from_name = match_moe_signature(
      moe_definition(kSeparateInputs,
                     "def run(x, gate_weight, up_proj, gate_proj, down_proj):\n"
                     "    p = torch.softmax(x @ gate_weight.T, -1)\n    w, i = p.topk(2)\n",
                     "mixtral_moe"));
  ASSERT_TRUE(from_name.has_value());
  EXPECT_EQ(from_name->match.op_params.at("top_k"), 2);
  EXPECT_EQ(from_name->match.op_params.at("renormalize"), false);
  EXPECT_EQ(from_name->match.op_params.at("scoring"), "softmax");

  // A reference with both scoring functions in its branches: its assignment decides.
  const auto assigned = match_moe_signature(moe_definition(
      kSeparateInputs,
      "SCORING = \"softmax\"\nTOP_K = 2\n"
      "def run(x, gate_weight, up_proj, gate_proj, down_proj):\n"
      "    l = x @ gate_weight.T\n"
      "    s = torch.sigmoid(l) if SCORING == \"sigmoid\" else torch.softmax(l, -1)\n",
      "qwen_moe"));
  ASSERT_TRUE(assigned.has_value());
  EXPECT_EQ(assigned->match.op_params.at("scoring"), "softmax");
}

// An expert-parallel FP8 layer as FlashInfer-Bench writes one, with no kernelarc block: the
// sigmoid written out, the chosen weights divided by a name holding their sum, the fused
// product's second half through a written-out SiLU (up first), and the local experts' offset and
// the scaling factor as scalar inputs.
TEST(MoeRecognition, AnExpertParallelFp8LayerWithItsRuleWrittenOut) {
  const std::string reference = R"(import torch
def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights,
        gemm1_weights_scale, gemm2_weights, gemm2_weights_scale, local_expert_offset,
        routed_scaling_factor):
    TOP_K = 4
    ROUTED_SCALING_FACTOR = 1.0  # a default the input overrides
    N_GROUP = 4
    TOPK_GROUP = 2
    prob = 1.0 / (1.0 + torch.exp(-routing_logits.float()))
    chosen = pick_experts(prob + routing_bias.float(), N_GROUP, TOPK_GROUP, TOP_K)
    picked = prob * chosen
    norm = picked.sum(dim=1, keepdim=True) + 1e-20
    coef = (picked / norm) * routed_scaling_factor
    for e in range(gemm1_weights.shape[0]):
        both = rows(e) @ dequant(gemm1_weights[e]).t()
        lin = both[:, :128]
        gated = both[:, 128:]
        inner = gated / (1.0 + torch.exp(-gated)) * lin
)";
  OrderedJson json = testing::moe_fp8_json("moe_fp8_grouped_topk4_e4", testing::moe_fp8_inputs(),
                                           reference, nullptr);
  const auto signature = match_moe_signature(parse_definition(json, "fp8_moe.json"));
  ASSERT_TRUE(signature.has_value());
  const OrderedJson& params = signature->match.op_params;
  EXPECT_EQ(params.at("top_k"), 4);
  EXPECT_EQ(params.at("scoring"), "sigmoid");
  EXPECT_EQ(params.at("renormalize"), true);
  EXPECT_EQ(params.at("n_group"), 4);
  EXPECT_EQ(params.at("topk_group"), 2);
  EXPECT_EQ(params.at("gate_up_order"), "up_gate");
  EXPECT_FALSE(params.contains("routed_scaling_factor"));  // the input holds it
  // The local share of the slots: 6 * top_k * 4 / 16 = 6 a token.
  EXPECT_EQ(signature->flops, "6 * T * 256 * 128");
  EXPECT_NE(signature->match.summary.find("4 of 16 experts local"), std::string::npos)
      << signature->match.summary;

  // The activation on the first half (the families' default order) sets no order, and a division
  // by a name that holds no sum is no renormalization.
  json["reference"] = std::regex_replace(
      std::regex_replace(reference,
                         std::regex("gated / \\(1.0 \\+ torch.exp\\(-gated\\)\\) \\* lin"),
                         "lin / (1.0 + torch.exp(-lin)) * gated"),
      std::regex("picked / norm"), "picked / TOP_K");
  const auto first_half = match_moe_signature(parse_definition(json, "fp8_moe.json"));
  ASSERT_TRUE(first_half.has_value());
  EXPECT_FALSE(first_half->match.op_params.contains("gate_up_order"));
  EXPECT_EQ(first_half->match.op_params.at("renormalize"), false);

  // The second half's slice as the activation's argument.
  json["reference"] = std::regex_replace(reference, std::regex("inner = .*"),
                                         "inner = F.silu(both[:, 128:]) * both[:, :128]");
  const auto inline_slice = match_moe_signature(parse_definition(json, "fp8_moe.json"));
  ASSERT_TRUE(inline_slice.has_value());
  EXPECT_EQ(inline_slice->match.op_params.at("gate_up_order"), "up_gate");
}

TEST(MoeRecognition, TheExpertsBackwardByItsRoutingInputsAndGradients) {
  const OrderedJson inputs = {
      {"hidden_states", tensor({"T", "H"})}, {"topk_ids", tensor({"T", "K"}, "int64")},
      {"topk_weights", tensor({"T", "K"})},  {"w13", tensor({"E", "I2", "H"})},
      {"w2", tensor({"E", "H", "I"})},       {"grad_output", tensor({"T", "H"})}};
  OrderedJson json = {{"name", "moe_experts_backward"},
                      {"op_type", ""},
                      {"axes",
                       {{"T", {{"type", "var"}}},
                        {"K", {{"type", "const"}, {"value", 2}}},
                        {"E", {{"type", "const"}, {"value", 8}}},
                        {"H", {{"type", "const"}, {"value", 16}}},
                        {"I", {{"type", "const"}, {"value", 8}}},
                        {"I2", {{"type", "const"}, {"value", 16}}}}},
                      {"inputs", inputs},
                      {"outputs",
                       {{"grad_hidden_states", tensor({"T", "H"})},
                        {"grad_w13", tensor({"E", "I2", "H"})},
                        {"grad_w2", tensor({"E", "H", "I"})}}},
                      {"reference",
                       "ACTIVATION = \"silu\"\n"
                       "def act(g):\n"
                       "    return F.silu(g) if ACTIVATION == \"silu\" else F.gelu(g, "
                       "approximate=\"tanh\")\n"
                       "def run(hidden_states, topk_ids, topk_weights, w13, w2, grad_output):\n"
                       "    pass\n"}};
  const auto signature = match_moe_signature(parse_definition(json, "backward.json"));
  ASSERT_TRUE(signature.has_value());
  EXPECT_EQ(signature->match.family, "moe_backward");
  // The assignment decides, though the reference also calls a tanh GELU.
  EXPECT_FALSE(signature->match.op_params.contains("activation"))
      << signature->match.op_params.dump();
  EXPECT_EQ(signature->flops, "16 * T * 2 * 16 * 8");

  json["reference"] = "def run(*args):\n    h = F.gelu(g, approximate='tanh') * u\n";
  const auto gelu = match_moe_signature(parse_definition(json, "backward.json"));
  ASSERT_TRUE(gelu.has_value());
  EXPECT_EQ(gelu->match.op_params.at("activation"), "gelu_tanh");
}

}  // namespace
}  // namespace kernelarc
