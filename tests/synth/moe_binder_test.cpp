// The moe binder: the tensors are told apart by their shapes (names only where shapes cannot),
// the routing rule of op_params reaches the header, the generated accessors and ka_moe_route
// give what a hand computation says (compiled and run on the CPU), and definitions the family
// cannot serve are rejected naming the field.
#include <gtest/gtest.h>

#include <string>

#include "../core/moe_fp8_fixture.h"
#include "../core/test_support.h"
#include "binder_test_support.h"
#include "core/expr.h"
#include "core/problem.h"
#include "synth/bound_template.h"
#include "synth/family.h"
#include "synth/family_moe.h"
#include "synth/kernel_template.h"

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

Definition fp8_definition(const OrderedJson& inputs, const OrderedJson& op_params) {
  return parse_definition(testing::moe_fp8_json("moe_fp8_case", inputs, "", op_params),
                          "moe_fp8_case.json");
}

OrderedJson fp8_inputs() {
  return testing::moe_fp8_inputs();
}

const OrderedJson kFp8Params = {{"top_k", 4},
                                {"scoring", "sigmoid"},
                                {"n_group", 4},
                                {"topk_group", 2},
                                {"gate_up_order", "up_gate"}};

TEST(MoeBinder, ReadsFp8BlockScaledLocalExpertsAndScalarInputs) {
  const Definition def = fp8_definition(fp8_inputs(), kFp8Params);
  const MoeProblem p = read_moe_problem(def);
  EXPECT_TRUE(p.fp8());
  EXPECT_EQ(p.experts, 4);
  EXPECT_EQ(p.routed_experts, 16);
  EXPECT_EQ(p.logits.spec->name, "routing_logits");
  EXPECT_EQ(p.bias.spec->name, "routing_bias");
  EXPECT_EQ(p.hidden_scale.spec->name, "hidden_states_scale");
  EXPECT_FALSE(p.hidden_scale_tokens_first);
  EXPECT_EQ(p.s13.spec->name, "gemm1_weights_scale");
  EXPECT_EQ(p.s_down.spec->name, "gemm2_weights_scale");
  EXPECT_EQ(p.local_offset.spec->name, "local_expert_offset");
  EXPECT_EQ(p.scaling.spec->name, "routed_scaling_factor");
  const FamilyBinding b = make_moe_binder()->bind(def, moe_template());
  EXPECT_EQ(b.constants.at("EXPERTS"), 16);
  EXPECT_EQ(b.constants.at("LOCAL_EXPERTS"), 4);
  EXPECT_EQ(b.constants.at("FP8"), 1);
  EXPECT_EQ(b.constants.at("ELEM_BYTES"), 1);
  EXPECT_TRUE(contains(b.header, "#define KA_ROUTED_SCALING (ka.routed_scaling())"));
  // The 16-bit layers keep one expert set and a literal factor.
  const FamilyBinding plain = make_moe_binder()->bind(
      moe_definition(kFusedInputs, {{"top_k", 2}, {"routed_scaling_factor", 2.5}}), moe_template());
  EXPECT_EQ(plain.constants.at("LOCAL_EXPERTS"), plain.constants.at("EXPERTS"));
  EXPECT_EQ(plain.constants.at("FP8"), 0);
}

// The generated accessors on the CPU: a scale of each kind at a block where a wrong layout reads
// another value (every scale holds its own index), the gate rows in w13's second half (up
// first), the scalars read through their pointers, and routing among the 16 experts scaled by
// the input factor: the weights sum to it.
TEST(MoeBinder, Fp8HeaderAddressesScalesAndReadsTheScalarInputs) {
  const FamilyBinding b =
      make_moe_binder()->bind(fp8_definition(fp8_inputs(), kFp8Params), moe_template());
  const std::string output = testing::run_header_driver(b.header, R"(
#include "ka_moe_routing.h"
int main() {
  const int T = 3;
  static unsigned char x[T * 256], w13[4 * 256 * 256], w2[4 * 256 * 128];
  static float logits[T * 16], x_scale[2 * T], s13[4 * 2 * 2], s2[4 * 2 * 1];
  static unsigned short bias[16], out[T * 256];
  for (int i = 0; i < 2 * T; ++i) x_scale[i] = i;
  for (int i = 0; i < 16; ++i) s13[i] = 100 + i;
  for (int i = 0; i < 8; ++i) s2[i] = 200 + i;
  for (int e = 0; e < 16; ++e) logits[16 + e] = 0.25f * e - 2.0f;
  int offset = 8;
  float scaling = 2.5f;
  ka_tensor in[10] = {make(logits, KA_FLOAT32, {T, 16}), make(bias, KA_BFLOAT16, {16}),
                      make(x, KA_FLOAT8_E4M3FN, {T, 256}), make(x_scale, KA_FLOAT32, {2, T}),
                      make(w13, KA_FLOAT8_E4M3FN, {4, 256, 256}), make(s13, KA_FLOAT32, {4, 2, 2}),
                      make(w2, KA_FLOAT8_E4M3FN, {4, 256, 128}), make(s2, KA_FLOAT32, {4, 2, 1}),
                      make(&offset, KA_INT32, {}), make(&scaling, KA_FLOAT32, {})};
  ka_tensor o[1] = {make(out, KA_BFLOAT16, {T, 256})};
  KaArgs ka;
  if (const char* error = ka_bind(in, 10, o, 1, &ka)) { std::printf("bind: %s\n", error); return 1; }
  std::printf("x_scale %g gate_scale %g up_scale %g down_scale %g\n", ka.x_scale(1, 1),
              ka.gate_scale(2, 0, 1), ka.up_scale(2, 0, 1), ka.down_scale(3, 1, 0));
  std::printf("gate %ld up %ld down %ld offset %d scaling %g\n", (long)(ka.gate_rows(2) - w13),
              (long)(ka.up_rows(2) - w13), (long)(ka.down_rows(3) - w2), ka.local_offset(),
              ka.routed_scaling());
  float token[16];
  for (int e = 0; e < 16; ++e) token[e] = ka.logit(1, e);
  int ids[4];
  float w[4];
  ka_moe_route(ka, token, ids, w);
  std::printf("ids %d %d %d %d sum %.4f\n", ids[0], ids[1], ids[2], ids[3], w[0] + w[1] + w[2] + w[3]);
  return 0;
}
)");
  // x_scale(1, 1): block-major, [1 * T + 1] = 4. Expert 2's gate rows are w13's second half:
  // scale row block 2 * 2 + 1, [(5) * 2 + 1] = 111; up [(4) * 2 + 1] = 109; down (3, 1, 0):
  // [(3 * 2 + 1) * 1] = 207.
  EXPECT_TRUE(contains(output, "x_scale 4 gate_scale 111 up_scale 109 down_scale 207")) << output;
  EXPECT_TRUE(contains(output, "gate 163840 up 131072 down 98304 offset 8 scaling 2.5")) << output;
  // Logits rise with e: groups {12..15} and {8..11} are kept, the top 4 are 15, 14, 13, 12.
  EXPECT_TRUE(contains(output, "ids 15 14 13 12 sum 2.5000")) << output;
}

TEST(MoeBinder, RejectsFp8LayersItCannotServeNamingTheField) {
  const auto error_without = [](const char* name) {
    OrderedJson inputs = fp8_inputs();
    inputs.erase(name);
    return input_error_of([&] { read_moe_problem(fp8_definition(inputs, kFp8Params)); });
  };
  EXPECT_TRUE(contains(error_without("gemm2_weights_scale"),
                       "inputs.gemm2_weights: float8_e4m3fn weights need their float32 block "
                       "scales, an input named gemm2_weights_scale"));
  EXPECT_TRUE(contains(error_without("hidden_states_scale"),
                       "inputs.hidden_states: float8_e4m3fn hidden states need their scales"));
  OrderedJson bad_scale = fp8_inputs();
  bad_scale["gemm1_weights_scale"] = tensor({"L", "HB", "HB"});
  bad_scale["gemm1_weights_scale"]["shape"][1] = "IB";
  EXPECT_TRUE(
      contains(input_error_of([&] { read_moe_problem(fp8_definition(bad_scale, kFp8Params)); }),
               "inputs.gemm1_weights_scale: expected float32 [L, 2, 2]"));
  OrderedJson bf16_weights = fp8_inputs();
  bf16_weights["gemm1_weights"]["dtype"] = "bfloat16";
  bf16_weights["gemm2_weights"]["dtype"] = "bfloat16";
  EXPECT_TRUE(
      contains(input_error_of([&] { read_moe_problem(fp8_definition(bf16_weights, kFp8Params)); }),
               "inputs.hidden_states.dtype: float8_e4m3fn hidden states need "
               "float8_e4m3fn expert weights"));
  OrderedJson odd_scalar = fp8_inputs();
  odd_scalar["epsilon"] = {{"shape", nullptr}, {"dtype", "float32"}};
  EXPECT_TRUE(
      contains(input_error_of([&] { read_moe_problem(fp8_definition(odd_scalar, kFp8Params)); }),
               "inputs.epsilon: a scalar the moe family does not read"));
  OrderedJson twice = kFp8Params;
  twice["routed_scaling_factor"] = 2.5;
  EXPECT_TRUE(
      contains(input_error_of([&] { read_moe_problem(fp8_definition(fp8_inputs(), twice)); }),
               "kernelarc.op_params.routed_scaling_factor: given twice"));
}

// moe_grouped's cuBLASLt route needs a [T * top_k, 2I] buffer and cuBLASLt's scratch: its
// workspace expression names the MATMUL_LIBRARY knob, and the instantiated solution's has the
// point's value written in, so that it names the axes alone and grows on that route only.
TEST(MoeBinder, TheLibraryRoutesWorkspaceIsWrittenOutPerPoint) {
  const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  const Problem problem = load_problem(kSource / "problems/cuda/moe_mixtral_8x7b_top2_bf16");
  std::optional<TemplateMatch> grouped;
  for (TemplateMatch& match : match_templates(library, problem, DeviceKind::Cuda))
    if (match.kernel->name == "moe_grouped") grouped = std::move(match);
  ASSERT_TRUE(grouped && grouped->bound) << (grouped ? grouped->reason : "not listed");
  const KnobPoint grouped_point = grouped->bound->space().space().default_point();
  KnobPoint library_point = grouped_point;
  library_point["MATMUL_LIBRARY"] = int64_t{1};
  ASSERT_TRUE(grouped->bound->space().is_valid(library_point));
  const auto workspace = [&](const KnobPoint& point) {
    const std::string expression =
        grouped->bound->instantiate(point).ext.at("workspace_bytes").get<std::string>();
    EXPECT_FALSE(contains(expression, "MATMUL_LIBRARY")) << expression;
    return evaluate_expr(expression, {{"num_tokens", 4096}});
  };
  const int64_t slots = 4096 * 2, inter = 14336, hidden = 4096;
  const int64_t mma = workspace(grouped_point), lt = workspace(library_point);
  EXPECT_GT(mma, slots * (inter + hidden) * 2);
  EXPECT_LT(mma, slots * (inter + hidden) * 2 + (int64_t{1} << 20));
  EXPECT_GE(lt - mma, slots * inter * 2 + (int64_t{32} << 20));
  EXPECT_LT(lt - mma, slots * inter * 2 + (int64_t{33} << 20));
}

}  // namespace
}  // namespace kernelarc
