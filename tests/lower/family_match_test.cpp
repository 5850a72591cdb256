// match_family on op graphs the tracer recorded (tests/data/lower_match/*/graph.json, made by
// generate.py there): each match's op_params must be what the hand-annotated problems say and
// must bind to the real templates; each refusal must say why.
#include "lower/family_match.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/kernel_template.h"

namespace kernelarc {
namespace {

const std::filesystem::path kCases = kSource / "tests/data/lower_match";

struct Case {
  Definition definition;
  OpGraph graph;
};

Case load_case(const std::string& name) {
  const std::filesystem::path dir = kCases / name;
  const std::string graph_path = (dir / "graph.json").string();
  return {load_definition(dir / "definition.json"),
          parse_op_graph(parse_json_text(read_text_file(graph_path), graph_path), graph_path)};
}

FamilyMatch match_case(const std::string& name) {
  const Case c = load_case(name);
  return match_family(c.graph, c.definition);
}

/// Equal as JSON values, whatever the key order.
void expect_same_json(const OrderedJson& actual, const OrderedJson& expected) {
  EXPECT_EQ(nlohmann::json::parse(actual.dump()), nlohmann::json::parse(expected.dump()))
      << "actual " << actual.dump() << "\nexpected " << expected.dump();
}

/// The op_params a bundled problem was annotated with by hand.
OrderedJson annotated_params(const std::string& problem) {
  return load_definition(kSource / "problems" / problem / "definition.json").ext.op_params;
}

/// Binds the case's definition, annotated with the match, to the bundled templates of `target`
/// serving the family; every template of the target must bind or name a knob constraint (a
/// template for other dtypes), and at least one must bind.
void expect_binds(const std::string& name, const FamilyMatch& match, const std::string& target) {
  static const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  Problem problem;
  problem.dir = kCases / name;
  problem.definition = load_case(name).definition;
  problem.definition.ext.op_family = match.family;
  problem.definition.ext.op_params = match.op_params;
  const std::vector<TemplateMatch> matches =
      match_templates(library, problem, *device_kind_from_name(target));
  ASSERT_FALSE(matches.empty()) << "no " << target << " template serves " << match.family;
  int bound = 0;
  for (const TemplateMatch& m : matches) {
    if (m.bound) {
      ++bound;
    } else {
      EXPECT_NE(m.reason.find("no knob point satisfies"), std::string::npos)
          << m.kernel->name << ": " << m.reason;
    }
  }
  EXPECT_GT(bound, 0) << name << " binds to no " << target << " template";
}

/// `targets`: where templates of the family exist (reduce has no CPU template yet).
FamilyMatch expect_match(const std::string& name, const std::string& family,
                         const OrderedJson& op_params,
                         const std::vector<std::string>& targets = {"cpu", "cuda"}) {
  const FamilyMatch match = match_case(name);
  EXPECT_TRUE(match.ok) << name << ": " << match.reason;
  EXPECT_EQ(match.family, family);
  expect_same_json(match.op_params, op_params);
  EXPECT_FALSE(match.summary.empty());
  if (match.ok)
    for (const std::string& target : targets) expect_binds(name, match, target);
  return match;
}

void expect_refusal(const std::string& name, const std::string& reason) {
  const FamilyMatch match = match_case(name);
  EXPECT_FALSE(match.ok) << name << " matched " << match.family << " " << match.op_params.dump();
  EXPECT_NE(match.reason.find(reason), std::string::npos) << match.reason;
}

TEST(FamilyMatch, RmsnormOfSolExecBenchReference) {
  expect_match("rmsnorm", "rmsnorm", {{"eps", 1e-5}});
}

TEST(FamilyMatch, RmsnormWithSquareDivisionAndWeightAfterTheCast) {
  expect_match("rmsnorm_square_div", "rmsnorm", {{"eps", 1e-6}});
}

TEST(FamilyMatch, FusedAddRmsnormWritesTheSumAsPrologueOutput) {
  const FamilyMatch match =
      expect_match("fused_add_rmsnorm", "rmsnorm", annotated_params("cuda/fused_add_rmsnorm_bf16"));
  EXPECT_EQ(match.op_params["prologue"], "hidden_states + residual");
}

TEST(FamilyMatch, SoftmaxFromTorchSoftmax) {
  expect_match("softmax", "softmax", OrderedJson::object());
}

TEST(FamilyMatch, SoftmaxFromExpOverSum) {
  expect_match("softmax_manual", "softmax", OrderedJson::object());
}

TEST(FamilyMatch, LayerNormFromNativeLayerNorm) {
  expect_match("layernorm", "layernorm", annotated_params("cuda/layernorm_bf16"));
}

TEST(FamilyMatch, LayerNormFromMeanAndBiasedVariance) {
  expect_match("layernorm_manual", "layernorm", {{"eps", 1e-5}});
}

TEST(FamilyMatch, RowReductions) {
  expect_match("row_sum", "reduce", annotated_params("cuda/row_sum_bf16_h8192"), {"cuda"});
  expect_match("row_mean", "reduce", {{"op", "mean"}, {"dim", -1}}, {"cuda"});
  expect_match("row_max", "reduce", {{"op", "max"}, {"dim", -1}}, {"cuda"});
}

TEST(FamilyMatch, SiluAndMulReadsTheTwoHalvesAtColumnOffsets) {
  expect_match("silu_and_mul", "elementwise",
               {{"expression", "silu(x_0) * x_1"},
                {"operands",
                 {{"x_0", {{"tensor", "x"}, {"column_offset", "0"}}},
                  {"x_1", {{"tensor", "x"}, {"column_offset", "14336"}}}}}});
}

TEST(FamilyMatch, GeluTanh) {
  expect_match("gelu", "elementwise", {{"expression", "gelu_tanh(x)"}});
}

/// The operands the recognizer names, as the gemm binder reads them.
OrderedJson operands(const char* a, const char* a_layout, const char* b, const char* b_layout) {
  return {{"a", a}, {"a_layout", a_layout}, {"b", b}, {"b_layout", b_layout}};
}

// Activations PyTorch computes as selects (leaky ReLU with a slope above 1, hardtanh, relu6,
// hardswish, hardsigmoid, ELU, SELU) are written with max, min and exp.
TEST(FamilyMatch, PiecewiseActivationsAreElementwise) {
  // y = hardswish(elu(x, 0.5)) + hardtanh(x, -2, 3); relu6(leaky_relu(y, 1.5)) +
  // hardsigmoid(selu(x))
  const std::string elu = "relu(x) + min(0.5 * (exp(x) - 1), 0)";
  const std::string y =
      "(" + elu + ") * (min(max(" + elu + " + 3, 0), 6) / 6) + min(max(x, -2), 3)";
  const std::string selu =
      "1.0507009873554805 * (relu(x) + min(1.6732632423543772 * (exp(x) - 1), 0))";
  expect_match("piecewise_activations", "elementwise",
               {{"expression", "min(max(min(" + y + ", 1.5 * (" + y + ")), 0), 6) + min(max(" +
                                   selu + " + 3, 0), 6) / 6"}});
}

// Activations PyTorch computes as selects whose sides do not meet (softplus and mish, threshold,
// hardshrink), torch.where over a comparison, and comparisons read as numbers are where()s.
TEST(FamilyMatch, SelectActivationsAreWheres) {
  // y = softplus(x) + mish(x) * threshold(x, -1, 2);
  // (hardshrink(y, 0.25) + x * (x != 1) - (x >= y).float()).masked_fill(x < -3, 0.5)
  const std::string softplus = "where(x > 20, x, log1p(exp(x)))";
  const std::string y = softplus + " + x * tanh(" + softplus + ") * where(x <= -1, 2, x)";
  expect_match("select_activations", "elementwise",
               {{"expression", "where(x < -3, 0.5, where(" + y + " >= -0.25, where(" + y +
                                   " <= 0.25, 0, " + y + "), " + y +
                                   ") + x * where(x != 1, 1, 0) - where(x >= " + y + ", 1, 0))"}});
}

TEST(FamilyMatch, AWhereOnABooleanInputIsNoExpression) {
  expect_refusal("where_mask_input",
                 "elementwise: a where selects on the input `mask`, not on a comparison");
}

// x * ((x > 0) + (x > 1)): the booleans' sum is their `or`, which where(c, 1, 0) + where(d, 1, 0)
// would make 2 above 1.
TEST(FamilyMatch, ArithmeticOnBooleansIsNoExpression) {
  expect_refusal("boolean_arithmetic", "needs aten.add.Tensor on booleans");
}

TEST(FamilyMatch, GemmFromTorchMm) {
  expect_match("gemm_mm", "gemm", operands("A", "mk", "B", "kn"));
}

TEST(FamilyMatch, GemmFromLinearWithBias) {
  OrderedJson params = operands("x", "mk", "weight", "nk");
  params["epilogue"] = "acc + bias";
  expect_match("gemm_linear_bias", "gemm", params);
}

TEST(FamilyMatch, GemmWithBiasAndGeluTanhEpilogue) {
  OrderedJson params = annotated_params("cuda/gemm_bias_gelu_bf16_n14336_k4096");
  params.update(operands("x", "mk", "weight", "nk"));
  expect_match("gemm_bias_gelu", "gemm", params);
}

// KernelBench's Gemm_Multiply_LeakyReLU: the scale and the leaky ReLU (a select in PyTorch, a
// max here) join the bias in the epilogue.
TEST(FamilyMatch, GemmWithAScaledLeakyReluEpilogue) {
  OrderedJson params = operands("x", "mk", "weight", "nk");
  params["epilogue"] = "max((acc + bias) * 2, 0.1 * ((acc + bias) * 2))";
  expect_match("gemm_scale_leaky_relu", "gemm", params);
}

// KernelBench's Matmul_Mish_Mish: each mish is x * tanh(softplus(x)), softplus with torch's
// threshold as a where.
TEST(FamilyMatch, GemmWithAMishMishEpilogue) {
  const std::string mish =
      "(acc + bias) * tanh(where(acc + bias > 20, acc + bias, log1p(exp(acc + bias))))";
  OrderedJson params = operands("x", "mk", "weight", "nk");
  params["epilogue"] =
      mish + " * tanh(where(" + mish + " > 20, " + mish + ", log1p(exp(" + mish + "))))";
  expect_match("gemm_mish_mish", "gemm", params);
}

// torch.where over the product, one side a softplus of its own beta and threshold.
TEST(FamilyMatch, GemmWithAWhereEpilogue) {
  OrderedJson params = operands("x", "mk", "weight", "nk");
  params["epilogue"] =
      "where(acc + bias < 0, where((acc + bias) * 2 > 10, acc + bias, log1p(exp((acc + bias) * "
      "2)) / 2), (acc + bias) * 0.5)";
  expect_match("gemm_where_softplus", "gemm", params);
}

// A square weight makes K and N one axis name (KernelBench's square products name all three
// N): only the named operands bind it.
TEST(FamilyMatch, ASquareWeightBindsThroughItsNamedOperands) {
  expect_match("gemm_square", "gemm", operands("x", "mk", "w", "nk"));
}

TEST(FamilyMatch, SwigluMlpNamesItsWeightsFromTheGraph) {
  // The bundled problem's reference: linear layers, casts to float32 and back, silu * up.
  expect_match(
      "mlp_swiglu", "mlp",
      {{"activation", "silu"}, {"gate", "gate_proj"}, {"up", "up_proj"}, {"down", "down_proj"}},
      {"cpu", "cuda"});
}

TEST(FamilyMatch, MlpWhoseNamesSayNothingTakesTheActivatedProductAsTheGate) {
  // (x p^T) * gelu_tanh(x q^T) r^T: q is the gate although p comes first; float32, so only the
  // CPU template binds (mlp_gated multiplies 16-bit operands).
  expect_match("mlp_unnamed", "mlp",
               {{"activation", "gelu_tanh"}, {"gate", "q"}, {"up", "p"}, {"down", "r"}}, {"cpu"});
}

TEST(FamilyMatch, PostNormResidualIsNotAnRmsnorm) {
  expect_refusal("olmo3_post_norm",
                 "rmsnorm: the output adds `residual` after the rmsnorm, which the row family "
                 "cannot express");
}

TEST(FamilyMatch, ScalarInputEpsIsNotAnRmsnorm) {
  expect_refusal("nemotron_rms_norm",
                 "rmsnorm: eps is the scalar input `eps`, but the row family needs eps as a "
                 "number in op_params");
}

TEST(FamilyMatch, SumOverAMiddleAxisIsNotARowReduction) {
  expect_refusal("middle_sum", "reduce: the sum runs over axes [1] of a rank-3 tensor");
}

TEST(FamilyMatch, AnInPlaceWriteIsNoFamily) {
  // y = x.clone(); y[:, 0] = 1; y * 2: matching `x * 2` would drop the assignment.
  expect_refusal("in_place_write", "aten.copy_.default (op 6) writes in place");
}

TEST(FamilyMatch, ConvolutionHasNoFamily) {
  expect_refusal("conv", "aten.convolution");
}

}  // namespace
}  // namespace kernelarc
