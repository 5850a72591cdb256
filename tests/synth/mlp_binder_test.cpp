// The mlp binder: a dense gated MLP is read as one expert that every token takes. The weights are
// told apart from the hidden states by their static sizes and from each other by shape (names
// only where shapes cannot), the generated header addresses them as the moe templates expect
// (compiled and run on the CPU), and definitions the family cannot serve are rejected naming
// the field.
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

KernelTemplate mlp_template() {
  return testing::stub_template("mlp_test", {"mlp"}, "cpu", TemplateBuild::SharedObject);
}

OrderedJson tensor(const std::vector<std::string>& shape, const std::string& dtype = "float32") {
  return {{"shape", shape}, {"dtype", dtype}};
}

/// Hidden 16, intermediate 8 (I != H, so shapes decide), tokens T.
Definition mlp_definition(const OrderedJson& inputs, const OrderedJson& op_params,
                          const OrderedJson& outputs = {{"out", tensor({"T", "H"})}},
                          const OrderedJson& tokens_axis = {{"type", "var"}}) {
  std::string parameters;
  for (const auto& [input, spec] : inputs.items())
    parameters += (parameters.empty() ? "" : ", ") + input;
  OrderedJson json = {{"name", "mlp_case"},
                      {"op_type", "mlp"},
                      {"axes",
                       {{"T", tokens_axis},
                        {"H", {{"type", "const"}, {"value", 16}}},
                        {"I", {{"type", "const"}, {"value", 8}}},
                        {"I2", {{"type", "const"}, {"value", 16}}}}},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"reference", "def run(" + parameters + "):\n    pass\n"},
                      {"kernelarc", {{"op_family", "mlp"}, {"op_params", op_params}}}};
  return parse_definition(json, "mlp_case.json");
}

// Up listed before gate: the names tell them apart, the shapes find x and down.
const OrderedJson kSeparateInputs = {{"up_proj", tensor({"I", "H"})},
                                     {"x", tensor({"T", "H"})},
                                     {"down_proj", tensor({"H", "I"})},
                                     {"gate_proj", tensor({"I", "H"})}};

const OrderedJson kFusedInputs = {
    {"hidden", tensor({"T", "H"})}, {"w13", tensor({"I2", "H"})}, {"w2", tensor({"H", "I"})}};

TEST(MlpBinder, ReadsADenseGatedMlpAsOneExpertWithoutRouting) {
  const Definition def = mlp_definition(kSeparateInputs, {{"gated", true}, {"activation", "gelu"}});
  const MoeProblem p = read_mlp_problem(def);  // points into def
  EXPECT_EQ(p.hidden.spec->name, "x");
  EXPECT_EQ(p.w_gate.spec->name, "gate_proj");
  EXPECT_EQ(p.w_up.spec->name, "up_proj");
  EXPECT_EQ(p.w_down.spec->name, "down_proj");
  EXPECT_FALSE(p.logits);
  EXPECT_FALSE(p.router_weight);
  EXPECT_EQ(p.experts, 1);
  EXPECT_EQ(p.top_k, 1);
  EXPECT_EQ(p.hidden_size, 16);
  EXPECT_EQ(p.inter, 8);
  EXPECT_EQ(p.activation, MoeActivation::Gelu);
  EXPECT_EQ(p.tokens_axis, "T");

  // A fixed-shape benchmark's tokens axis is static: x is still told from the weights.
  const Definition fixed = mlp_definition(kSeparateInputs, {}, {{"out", tensor({"T", "H"})}},
                                          {{"type", "const"}, {"value", 5}});
  const MoeProblem f = read_mlp_problem(fixed);
  EXPECT_EQ(f.hidden.spec->name, "x");
  EXPECT_EQ(f.w_down.spec->name, "down_proj");

  // Names in op_params (recognition reads them off the graph) override the names' hints.
  const Definition named =
      mlp_definition(kSeparateInputs, {{"gate", "up_proj"}, {"up", "gate_proj"}});
  const MoeProblem n = read_mlp_problem(named);
  EXPECT_EQ(n.w_gate.spec->name, "up_proj");
  EXPECT_EQ(n.w_up.spec->name, "gate_proj");

  const FamilyBinding b = make_mlp_binder()->bind(
      mlp_definition(kFusedInputs, {{"gate_up_order", "up_gate"}}), mlp_template());
  EXPECT_EQ(b.sizes.at("TOKENS"), "T");
  EXPECT_EQ(b.constants.at("EXPERTS"), 1);
  EXPECT_EQ(b.constants.at("TOP_K"), 1);
  EXPECT_EQ(b.constants.at("INTER"), 8);
  EXPECT_EQ(b.constants.at("HIDDEN"), 16);
  EXPECT_FALSE(contains(b.header, "routing"));  // no routing input, no ka_logit_t
}

// The header's accessors, run on the CPU: a fused w13 with the up rows first puts the gate rows
// I * H = 128 elements in; x and out rows are H apart; the activation is the one asked for; the
// routing rule the moe templates apply sends every token to expert 0 with weight exactly 1.
TEST(MlpBinder, HeaderAddressesTheWeightsAsTheMoeTemplatesExpect) {
  const FamilyBinding b = make_mlp_binder()->bind(
      mlp_definition(kFusedInputs, {{"gate_up_order", "up_gate"}, {"activation", "silu"}}),
      mlp_template());
  const std::string output = testing::run_header_driver(b.header, R"(
#include <cmath>
#include "ka_moe_routing.h"
int main() {
  static float x[3 * 16], w13[16 * 16], w2[16 * 8], out[3 * 16];
  ka_tensor in[3] = {make(x, KA_FLOAT32, {3, 16}), make(w13, KA_FLOAT32, {16, 16}),
                     make(w2, KA_FLOAT32, {16, 8})};
  ka_tensor o[1] = {make(out, KA_FLOAT32, {3, 16})};
  KaArgs ka;
  if (const char* error = ka_bind(in, 3, o, 1, &ka)) { std::printf("bind: %s\n", error); return 1; }
  std::printf("tokens %lld up %ld gate %ld down %ld x %ld out %ld act %.5f experts %d\n",
              ka.tokens(), (long)(ka.up_rows(0) - w13), (long)(ka.gate_rows(0) - w13),
              (long)(ka.down_rows(0) - w2), (long)(ka.x_row(2) - x), (long)(ka.out_row(1) - out),
              ka_moe_activation(1.0f), KA_EXPERTS);
  // The one expert's logit: routing through the moe families' rule takes it with weight 1.
  float logit = ka.logit(2, 0);
  int id = -1;
  float weight = 0.0f;
  ka_moe_route(ka, &logit, &id, &weight);
  std::printf("route %d %.9g\n", id, weight);
  in[0].shape[1] = 15;
  std::printf("wrong hidden: %s\n", ka_bind(in, 3, o, 1, &ka) ? "refused" : "bound");
  return 0;
}
)");
  // silu(1) = 1 / (1 + e^-1) = 0.73106.
  EXPECT_TRUE(contains(output, "tokens 3 up 0 gate 128 down 0 x 32 out 16 act 0.73106 experts 1"))
      << output;
  EXPECT_TRUE(contains(output, "route 0 1\n")) << output;
  EXPECT_TRUE(contains(output, "wrong hidden: refused")) << output;
}

TEST(MlpBinder, RejectsWhatTheFamilyCannotServeNamingTheField) {
  EXPECT_TRUE(contains(input_error_of([] {
                         read_mlp_problem(mlp_definition(kSeparateInputs, {{"gated", false}}));
                       }),
                       "kernelarc.op_params.gated: the mlp family serves gated MLPs"));
  EXPECT_TRUE(contains(input_error_of([] {
                         read_mlp_problem(mlp_definition(kSeparateInputs, {{"top_k", 2}}));
                       }),
                       "kernelarc.op_params.top_k: unknown field (expected gated, activation, "
                       "gate_up_order, gate, up, "
                       "down)"));
  EXPECT_TRUE(
      contains(input_error_of([] {
                 read_mlp_problem(mlp_definition(kSeparateInputs, {{"gate_up_order", "up_gate"}}));
               }),
               "applies to a fused gate-and-up weight only"));
  EXPECT_TRUE(contains(input_error_of([] {
                         read_mlp_problem(mlp_definition(kSeparateInputs, {{"gate", "x"}}));
                       }),
                       "kernelarc.op_params.gate: \"x\" is not one of the [I, H] weights"));
  EXPECT_TRUE(contains(input_error_of([] {
                         read_mlp_problem(mlp_definition(kSeparateInputs, {{"down", "up_proj"}}));
                       }),
                       "kernelarc.op_params.down: \"up_proj\" is not the [H, I] weight"));
  EXPECT_TRUE(
      contains(input_error_of([] {
                 read_mlp_problem(mlp_definition(kFusedInputs, {{"gate", "w13"}}));
               }),
               "kernelarc.op_params.gate: names separate gate and up weights, but w13 holds both"));
  OrderedJson half_w13 = kFusedInputs;
  half_w13["w13"] = tensor({"I", "H"});
  EXPECT_TRUE(contains(input_error_of([&] { read_mlp_problem(mlp_definition(half_w13, {})); }),
                       "inputs.w13: expected [2 * I, H]"));
  OrderedJson two_activations = kSeparateInputs;
  two_activations["residual"] = tensor({"T", "H"});
  EXPECT_TRUE(
      contains(input_error_of([&] { read_mlp_problem(mlp_definition(two_activations, {})); }),
               "inputs.residual: a second input shaped as the output"));
  EXPECT_TRUE(contains(
      input_error_of([] {
        read_mlp_problem(mlp_definition(kSeparateInputs, {}, {{"out", tensor({"T", "I"})}}));
      }),
      "inputs: expected the hidden states, [T, H], shaped as the one output"));
  OrderedJson with_norm = kSeparateInputs;
  with_norm["norm_weight"] = tensor({"H"});
  EXPECT_TRUE(contains(input_error_of([&] { read_mlp_problem(mlp_definition(with_norm, {})); }),
                       "inputs.norm_weight: not an MLP input"));
  OrderedJson no_down = kSeparateInputs;
  no_down.erase("down_proj");
  EXPECT_TRUE(contains(input_error_of([&] { read_mlp_problem(mlp_definition(no_down, {})); }),
                       "expected one down projection [H, I]"));
}

}  // namespace
}  // namespace kernelarc
