// The moe binder: the tensors are told apart by their shapes (names only where shapes cannot),
// the routing rule of op_params reaches the header, the generated accessors and ka_moe_route
// give what a hand computation says (compiled and run on the CPU), and definitions the family
// cannot serve are rejected naming the field.
#include <gtest/gtest.h>

#include <string>

#include "../core/test_support.h"
#include "binder_test_support.h"
#include "synth/family.h"
#include "synth/family_moe.h"

namespace kernelarc {
namespace {

using testing::contains;
using testing::input_error_of;

KernelTemplate moe_template(const std::string& target = "cpu") {
  return testing::stub_template("moe_test", {"moe"}, target, TemplateBuild::SharedObject);
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

/// 8 experts in 4 groups, hidden 16, intermediate 8 (I != H, so shapes decide everything).
Definition moe_definition(const OrderedJson& inputs, const OrderedJson& op_params) {
  std::string parameters;
  for (const auto& [input, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + input;
  OrderedJson json = {{"name", "moe_case"},
                      {"op_type", "moe"},
                      {"axes",
                       {{"T", {{"type", "var"}}},
                        {"E", {{"type", "const"}, {"value", 8}}},
                        {"H", {{"type", "const"}, {"value", 16}}},
                        {"I", {{"type", "const"}, {"value", 8}}},
                        {"I2", {{"type", "const"}, {"value", 16}}}}},
                      {"inputs", inputs},
                      {"outputs", {{"output", tensor({"T", "H"})}}},
                      {"reference", "def run(" + parameters + "):\n    pass\n"},
                      {"kernelarc", {{"op_family", "moe"}, {"op_params", op_params}}}};
  return parse_definition(json, "moe_case.json");
}

const OrderedJson kFusedInputs = {{"hidden_states", tensor({"T", "H"})},
                                  {"router_logits", tensor({"T", "E"})},
                                  {"e_score_correction_bias", tensor({"E"})},
                                  {"w13", tensor({"E", "I2", "H"})},
                                  {"w2", tensor({"E", "H", "I"})}};

const OrderedJson kSeparateInputs = {{"x", tensor({"T", "H"})},
                                     {"gate_weight", tensor({"E", "H"}, "bfloat16")},
                                     {"up_proj", tensor({"E", "I", "H"})},
                                     {"gate_proj", tensor({"E", "I", "H"})},
                                     {"down_proj", tensor({"E", "H", "I"})}};

TEST(MoeBinder, FindsTensorsByShapeAndReadsTheRoutingRule) {
  const Definition def = moe_definition(kFusedInputs, {{"top_k", 3},
                                                       {"scoring", "sigmoid"},
                                                       {"n_group", 4},
                                                       {"topk_group", 2},
                                                       {"routed_scaling_factor", 2.5},
                                                       {"gate_up_order", "up_gate"}});
  const MoeProblem p = read_moe_problem(def);
  EXPECT_EQ(p.hidden.spec->name, "hidden_states");
  EXPECT_EQ(p.logits.spec->name, "router_logits");
  EXPECT_EQ(p.bias.spec->name, "e_score_correction_bias");
  EXPECT_EQ(p.w13.spec->name, "w13");
  EXPECT_EQ(p.w_down.spec->name, "w2");
  EXPECT_FALSE(p.router_weight);
  EXPECT_EQ(p.experts, 8);
  EXPECT_EQ(p.hidden_size, 16);
  EXPECT_EQ(p.inter, 8);
  EXPECT_TRUE(p.sigmoid);
  EXPECT_TRUE(p.up_first);
  const FamilyBinding b = make_moe_binder()->bind(def, moe_template());
  EXPECT_EQ(b.sizes.at("TOKENS"), "T");
  EXPECT_EQ(b.constants.at("TOP_K"), 3);
  EXPECT_EQ(b.constants.at("W_BYTES"), 4);
  EXPECT_EQ(b.constants.at("ROUTER_WEIGHT"), 0);
  EXPECT_TRUE(contains(b.header, "#define KA_N_GROUP 4"));
  EXPECT_TRUE(contains(b.header, "#define KA_ROUTED_SCALING 2.5f"));

  // Separate gate and up are told apart by name: up_proj comes first here.
  const Definition separate = moe_definition(kSeparateInputs, {{"top_k", 2}});
  const MoeProblem s = read_moe_problem(separate);
  EXPECT_EQ(s.router_weight.spec->name, "gate_weight");
  EXPECT_EQ(s.w_gate.spec->name, "gate_proj");
  EXPECT_EQ(s.w_up.spec->name, "up_proj");
  EXPECT_EQ(s.hidden.spec->name, "x");
  EXPECT_TRUE(s.renormalize);  // the default
}

// The header's weight accessors and ka_moe_route, run on the CPU: expert 5's up rows start at
// w13 + 5 * 2I * H (up first), its gate rows I * H later; sigmoid scores plus bias, groups of 2
// experts ranked by the sum of their two selection scores, the best 2 groups kept, the top 3
// experts among them, weights renormalized and scaled.
TEST(MoeBinder, HeaderAddressesWeightsAndRoutesAsSpecified) {
  const Definition def = moe_definition(kFusedInputs, {{"top_k", 3},
                                                       {"scoring", "sigmoid"},
                                                       {"n_group", 4},
                                                       {"topk_group", 2},
                                                       {"routed_scaling_factor", 2.5},
                                                       {"gate_up_order", "up_gate"}});
  const FamilyBinding b = make_moe_binder()->bind(def, moe_template());
  const std::string output = testing::run_header_driver(b.header, R"(
#include <cmath>
#include "ka_moe_routing.h"
int main() {
  static float x[2 * 16], logits[2 * 8], bias[8], w13[8 * 16 * 16], w2[8 * 16 * 8], out[2 * 16];
  // Groups {0,1} {2,3} {4,5} {6,7}; selection = sigmoid(logit) + bias.
  const float l[8] = {2.0f, -4.0f, 0.5f, 0.4f, -1.0f, 3.0f, 0.0f, 0.1f};
  const float bb[8] = {0.0f, 0.0f, 0.3f, 0.3f, 0.0f, 0.0f, 0.0f, -0.5f};
  for (int e = 0; e < 8; ++e) logits[8 + e] = l[e], bias[e] = bb[e];
  ka_tensor in[5] = {make(x, KA_FLOAT32, {2, 16}), make(logits, KA_FLOAT32, {2, 8}),
                     make(bias, KA_FLOAT32, {8}), make(w13, KA_FLOAT32, {8, 16, 16}),
                     make(w2, KA_FLOAT32, {8, 16, 8})};
  ka_tensor o[1] = {make(out, KA_FLOAT32, {2, 16})};
  KaArgs ka;
  if (const char* error = ka_bind(in, 5, o, 1, &ka)) { std::printf("bind: %s\n", error); return 1; }
  std::printf("tokens %lld up %ld gate %ld down %ld x %ld\n", ka.tokens(), (long)(ka.up_rows(5) - w13),
              (long)(ka.gate_rows(5) - w13), (long)(ka.down_rows(5) - w2), (long)(ka.x_row(1) - x));
  float token[8];
  for (int e = 0; e < 8; ++e) token[e] = ka.logit(1, e);
  int ids[3];
  float w[3];
  ka_moe_route(ka, token, ids, w);
  std::printf("ids %d %d %d weights %.5f %.5f %.5f\n", ids[0], ids[1], ids[2], w[0], w[1], w[2]);
  return 0;
}
)");
  EXPECT_TRUE(contains(output, "tokens 2 up 1280 gate 1408 down 640 x 16")) << output;
  // sigmoid: e0 .8808, e1 .0180, e2 .6225(+.3), e3 .5987(+.3), e4 .2689, e5 .9526, e6 .5,
  // e7 .5250(-.5). Group sums: {0,1} .8988, {2,3} 1.8212, {4,5} 1.2215, {6,7} .5250: groups
  // {2,3} and {4,5} kept; the top 3 by selection: e5 .9526, e2 .9225, e3 .8987. Weights: the
  // sigmoid scores .9526, .6225, .5987 over their sum 2.1738, times 2.5.
  EXPECT_TRUE(contains(output, "ids 5 2 3 weights 1.09556 0.71589 0.68855")) << output;
}

TEST(MoeBinder, RejectsWhatTheFamilyCannotServeNamingTheField) {
  EXPECT_TRUE(contains(input_error_of([] { read_moe_problem(moe_definition(kFusedInputs, {})); }),
                       "kernelarc.op_params.top_k: required"));
  EXPECT_TRUE(
      contains(input_error_of([] {
                 read_moe_problem(moe_definition(kFusedInputs, {{"top_k", 2}, {"n_group", 3}}));
               }),
               "kernelarc.op_params.n_group: expected a divisor of the 8 experts"));
  EXPECT_TRUE(contains(input_error_of([] {
                         read_moe_problem(moe_definition(
                             kFusedInputs, {{"top_k", 5}, {"n_group", 4}, {"topk_group", 2}}));
                       }),
                       "hold fewer than top_k"));
  EXPECT_TRUE(contains(
      input_error_of([] {
        read_moe_problem(moe_definition(kFusedInputs, {{"top_k", 2}, {"scoring", "relu"}}));
      }),
      "kernelarc.op_params.scoring: expected \"softmax\", \"sigmoid\""));
  OrderedJson no_routing = kFusedInputs;
  no_routing.erase("router_logits");
  EXPECT_TRUE(contains(input_error_of([&] {
                         read_moe_problem(moe_definition(no_routing, {{"top_k", 2}}));
                       }),
                       "expected exactly one routing input"));
  OrderedJson bad_w13 = kFusedInputs;
  bad_w13["w13"] = tensor({"E", "I", "H"});
  EXPECT_TRUE(contains(input_error_of([&] {
                         read_moe_problem(moe_definition(bad_w13, {{"top_k", 2}}));
                       }),
                       "inputs.w13: expected [E, 2 * I, H]"));
}

}  // namespace
}  // namespace kernelarc
