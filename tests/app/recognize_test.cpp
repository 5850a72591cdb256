// Recognition end to end through the tracer (the oracle's Python): an unannotated problem is
// matched to a hand-written family or lowered to a fused plan, an annotated one is taken as
// written without tracing (unless no template implements its family: then its reference is
// recognized), an unsupported op is named; the derived bytes and FLOPs feed the
// speed-of-light bound, which counts a half-precision fused matmul on the tensor cores.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "app/recognize.h"
#include "eval/speed_of_light.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;

class Recognize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-recognize-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A row problem over [batch_size, hidden_size] float32 tensors x (and `extra` inputs).
  Problem row_problem(const std::string& reference, const OrderedJson& extension = nullptr) {
    OrderedJson json = {
        {"name", "row_problem"},
        {"axes", {{"batch_size", {{"type", "var"}}}, {"hidden_size", {{"type", "var"}}}}},
        {"inputs",
         {{"x", {{"shape", {"batch_size", "hidden_size"}}, {"dtype", "float32"}}},
          {"weight", {{"shape", {"hidden_size"}}, {"dtype", "float32"}}}}},
        {"outputs", {{"output", {{"shape", {"batch_size", "hidden_size"}}, {"dtype", "float32"}}}}},
        {"reference", reference}};
    if (!extension.is_null()) json["kernelarc"] = extension;
    Problem problem;
    problem.dir = dir_;
    problem.definition = parse_definition(json, "row_problem");
    return problem;
  }

  RecognizeOptions options() const { return {"", dir_ / "graphs", true}; }

  fs::path dir_;
};

TEST_F(Recognize, AnUnannotatedRmsNormMatchesItsFamilyWithBytesFromTheGraph) {
  Problem problem = row_problem(
      "import torch\n\ndef run(x, weight):\n"
      "    variance = x.pow(2).mean(-1, keepdim=True)\n"
      "    return weight * (x * torch.rsqrt(variance + 1e-6))\n");
  const Recognition r = recognize(problem, options());
  ASSERT_EQ(r.source, Recognition::Source::Matched) << r.reason;
  EXPECT_EQ(r.family, "rmsnorm");
  EXPECT_DOUBLE_EQ(r.op_params.at("eps").get<double>(), 1e-6);
  EXPECT_FALSE(r.summary.empty());
  EXPECT_TRUE(r.graph.is_object());
  apply_recognition(problem, r);
  EXPECT_EQ(problem.definition.ext.op_family, "rmsnorm");
  EXPECT_EQ(problem.definition.ext.flops, "");  // no matrix product
  const AxisValues axes{{"batch_size", 3}, {"hidden_size", 10}};
  EXPECT_DOUBLE_EQ(problem_bytes(problem.definition, axes), (30 + 10 + 30) * 4);
}

TEST_F(Recognize, AnInputTheReferenceNeverReadsIsNoBytes) {
  const Recognition r = recognize(
      row_problem("import torch\n\ndef run(x, weight):\n    return torch.softmax(x, dim=-1)\n"),
      options());
  ASSERT_TRUE(r.served()) << r.reason;
  EXPECT_EQ(r.bytes, "batch_size*hidden_size*4 + batch_size*hidden_size*4");
}

TEST_F(Recognize, WorkNoFamilyExpressesIsLoweredToAFusedPlan) {
  Problem problem = row_problem(
      "import torch\n\ndef run(x, weight):\n"
      "    return torch.softmax(x, dim=-1) * weight + torch.sigmoid(x)\n");
  const Recognition r = recognize(problem, options());
  ASSERT_EQ(r.source, Recognition::Source::Fused) << r.reason;
  EXPECT_EQ(r.family, "fused");
  EXPECT_EQ(r.op_params.at("version"), 1);
  EXPECT_FALSE(r.op_params.at("kernels").empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("no hand-written family matches"), std::string::npos);
  apply_recognition(problem, r);
  EXPECT_EQ(problem.definition.ext.op_family, "fused");
  EXPECT_EQ(problem.definition.ext.op_params, r.op_params);
}

TEST_F(Recognize, AnOpNothingLowersIsNotServedAndNamed) {
  Problem problem = row_problem(
      "import torch\n\ndef run(x, weight):\n"
      "    return torch.special.i0(x) * weight\n");
  const Recognition r = recognize(problem, options());
  EXPECT_EQ(r.source, Recognition::Source::NotServed);
  EXPECT_FALSE(r.served());
  EXPECT_NE(r.reason.find("aten.i0"), std::string::npos) << r.reason;
  apply_recognition(problem, r);
  EXPECT_EQ(problem.definition.ext.op_family, "");
}

TEST_F(Recognize, AnAnnotatedDefinitionIsTakenAsWrittenWithoutTracing) {
  Problem problem =
      row_problem("def run(x, weight):\n    raise RuntimeError('traced')\n",
                  {{"op_family", "rmsnorm"}, {"op_params", {{"eps", 1e-5}}}, {"bytes", "7"}});
  const Recognition r = recognize(problem, options());
  EXPECT_EQ(r.source, Recognition::Source::Annotated);
  EXPECT_EQ(r.family, "rmsnorm");
  EXPECT_EQ(r.op_params, OrderedJson({{"eps", 1e-5}}));
  EXPECT_TRUE(r.graph.is_null());
  EXPECT_FALSE(fs::exists(dir_ / "graphs"));
  apply_recognition(problem, r);
  EXPECT_EQ(problem.definition.ext.bytes, "7");
}

TEST_F(Recognize, AnAnnotatedFamilyNoTemplateImplementsIsRecognizedFromTheReference) {
  // "swiglu_gate" names no family of the library: the reference (an rmsnorm) is traced instead.
  Problem problem = row_problem(
      "import torch\n\ndef run(x, weight):\n"
      "    variance = x.pow(2).mean(-1, keepdim=True)\n"
      "    return weight * (x * torch.rsqrt(variance + 1e-6))\n",
      {{"op_family", "swiglu_gate"}, {"op_params", {{"gated", true}}}, {"bytes", "7"}});
  const Recognition r = recognize(problem, options());
  ASSERT_EQ(r.source, Recognition::Source::Matched) << r.reason;
  EXPECT_EQ(r.family, "rmsnorm");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("kernelarc.op_family \"swiglu_gate\" is annotated, but no cpu "
                                 "template serves op family \"swiglu_gate\""),
            std::string::npos)
      << r.notes.front();
  EXPECT_NE(r.notes.front().find("recognized from the reference instead"), std::string::npos);
  apply_recognition(problem, r);
  EXPECT_EQ(problem.definition.ext.op_family, "rmsnorm");
  EXPECT_EQ(problem.definition.ext.bytes, "7");  // the annotation's costs stay

  // A reference nothing serves either keeps the annotation, and says why.
  const Recognition unlowered = recognize(row_problem("import torch\n\ndef run(x, weight):\n"
                                                      "    return torch.special.i0(x) * weight\n",
                                                      {{"op_family", "swiglu_gate"}}),
                                          options());
  EXPECT_EQ(unlowered.source, Recognition::Source::Annotated);
  EXPECT_EQ(unlowered.family, "swiglu_gate");
  ASSERT_FALSE(unlowered.notes.empty());
  EXPECT_NE(unlowered.notes.front().find("the reference did not serve it either"),
            std::string::npos)
      << unlowered.notes.front();

  // With tracing off the annotation is taken as written.
  RecognizeOptions off = options();
  off.trace = false;
  EXPECT_EQ(recognize(problem, off).source, Recognition::Source::Annotated);
}

TEST_F(Recognize, WithTracingOffAnUnannotatedDefinitionIsNotServed) {
  RecognizeOptions off = options();
  off.trace = false;
  const Recognition r =
      recognize(row_problem("import torch\n\ndef run(x, weight):\n    return x * weight\n"), off);
  EXPECT_EQ(r.source, Recognition::Source::NotServed);
  EXPECT_NE(r.reason.find("no kernelarc.op_family"), std::string::npos) << r.reason;
}

/// A FlashInfer-form paged decode problem: its reference indexes pages with .item(), which no
/// trace follows; the tensors alone say what it is.
Problem paged_decode_problem(const fs::path& dir, const std::string& name,
                             const std::string& lse_description) {
  const auto t = [](std::vector<std::string> shape, const char* dtype) {
    return OrderedJson{{"shape", std::move(shape)}, {"dtype", dtype}};
  };
  OrderedJson json = {
      {"name", name},
      {"axes",
       {{"batch_size", {{"type", "var"}}},
        {"num_pages", {{"type", "var"}}},
        {"len_indptr", {{"type", "var"}}},
        {"num_kv_indices", {{"type", "var"}}},
        {"num_qo_heads", {{"type", "const"}, {"value", 32}}},
        {"num_kv_heads", {{"type", "const"}, {"value", 8}}},
        {"head_dim", {{"type", "const"}, {"value", 128}}},
        {"page_size", {{"type", "const"}, {"value", 16}}}}},
      {"inputs",
       {{"q", t({"batch_size", "num_qo_heads", "head_dim"}, "bfloat16")},
        {"k_cache", t({"num_pages", "page_size", "num_kv_heads", "head_dim"}, "bfloat16")},
        {"v_cache", t({"num_pages", "page_size", "num_kv_heads", "head_dim"}, "bfloat16")},
        {"kv_indptr", t({"len_indptr"}, "int32")},
        {"kv_indices", t({"num_kv_indices"}, "int32")},
        {"sm_scale", {{"shape", nullptr}, {"dtype", "float32"}}}}},
      {"outputs",
       {{"output", t({"batch_size", "num_qo_heads", "head_dim"}, "bfloat16")},
        {"lse",
         {{"shape", {"batch_size", "num_qo_heads"}},
          {"dtype", "float32"},
          {"description", lse_description}}}}},
      {"reference",
       "import torch\n\ndef run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):\n"
       "    start = int(kv_indptr[0].item())\n    raise NotImplementedError\n"}};
  Problem problem;
  problem.dir = dir;
  problem.definition = parse_definition(json, name);
  return problem;
}

TEST_F(Recognize, APagedAttentionIsMatchedByItsTensorsWithoutATrace) {
  const Recognition r = recognize(
      paged_decode_problem(dir_, "gqa_paged_decode_h32_kv8_d128_ps16", "log-sum-exp, base 2"),
      {"", dir_ / "graphs", false});
  ASSERT_EQ(r.source, Recognition::Source::Matched) << r.reason;
  EXPECT_EQ(r.family, "attention");
  EXPECT_EQ(r.op_params, (OrderedJson{{"causal", false}, {"lse_base", 2}}));
  EXPECT_TRUE(r.graph.is_null()) << "matched before any trace";
  // The pages used (num_kv_indices of 16 rows), not the whole cache.
  EXPECT_NE(r.bytes.find("2 * num_kv_indices * 16 * 8 * 128 * 2"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.flops, "4 * 32 * 128 * num_kv_indices * 16");

  const Recognition natural = recognize(
      paged_decode_problem(dir_, "causal_attention_decode", "natural logarithm of the sum"),
      {"", dir_ / "graphs", false});
  EXPECT_EQ(natural.op_params, (OrderedJson{{"causal", true}, {"lse_base", "e"}}));

  // Attention tensors under a name that does not say attention are left to the tracer.
  const Recognition unnamed =
      recognize(paged_decode_problem(dir_, "paged_op", "base 2"), {"", dir_ / "graphs", false});
  EXPECT_EQ(unnamed.source, Recognition::Source::NotServed);
}

TEST_F(Recognize, TheFlopsOfARecognizedMatmulCountEveryProduct) {
  OrderedJson json = {
      {"name", "mm_relu"},
      {"axes",
       {{"M", {{"type", "var"}}},
        {"N", {{"type", "const"}, {"value", 64}}},
        {"K", {{"type", "const"}, {"value", 32}}}}},
      {"inputs",
       {{"a", {{"shape", {"M", "K"}}, {"dtype", "float32"}}},
        {"b", {{"shape", {"K", "N"}}, {"dtype", "float32"}}}}},
      {"outputs", {{"output", {{"shape", {"M", "N"}}, {"dtype", "float32"}}}}},
      {"reference", "import torch\n\ndef run(a, b):\n    return torch.relu(a @ b)\n"}};
  Problem problem;
  problem.dir = dir_;
  problem.definition = parse_definition(json, "mm_relu");
  const Recognition r = recognize(problem, options());
  ASSERT_TRUE(r.served()) << r.reason;
  apply_recognition(problem, r);
  const AxisValues axes{{"M", 5}, {"N", 64}, {"K", 32}};
  EXPECT_DOUBLE_EQ(problem_flops(problem.definition, axes), 2.0 * 5 * 64 * 32);
}

/// A definition served by a fused plan of one kernel of `kind`, its inputs of `dtype`.
Definition fused_definition(const std::string& kind, const std::string& dtype) {
  OrderedJson json = {
      {"name", "fused"},
      {"axes", {{"M", {{"type", "var"}}}}},
      {"inputs", {{"a", {{"shape", {"M", "M"}}, {"dtype", dtype}}}}},
      {"outputs", {{"output", {{"shape", {"M", "M"}}, {"dtype", dtype}}}}},
      {"reference", "def run(a):\n    return a @ a\n"},
      {"kernelarc", {{"op_family", "fused"}, {"op_params", {{"kernels", {{{"kind", kind}}}}}}}}};
  return parse_definition(json, "fused");
}

/// A GPU's calibration: FMA at 50 TFLOP/s, bf16 tensor cores at 800, float32 ones at 100.
Calibration gpu_calibration() {
  Calibration calibration;
  calibration.device = "cuda:0";
  calibration.copy_bandwidth_gbs = 1000;
  calibration.fp32_fma_tflops = 50;
  calibration.tensor_tflops["bfloat16"] = 800;
  calibration.tensor_tflops["float32"] = 100;
  return calibration;
}

TEST(FusedSpeedOfLight, AHalfPrecisionMatmulIsBoundByTheTensorCores) {
  const Calibration calibration = gpu_calibration();
  const auto peak = compute_peak(fused_definition("matmul", "bfloat16"), calibration);
  ASSERT_TRUE(peak.has_value());
  EXPECT_TRUE(peak->bounds_sol);
  EXPECT_EQ(peak->what, "bfloat16 tensor cores");
  EXPECT_DOUBLE_EQ(peak->flops_per_second, 800e12);
  // float32 operands and plans without a matrix product stay on the CUDA cores.
  for (const auto& [kind, dtype] : {std::pair{"matmul", "float32"}, {"reduce", "bfloat16"}}) {
    const auto other = compute_peak(fused_definition(kind, dtype), calibration);
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->what, "fp32 FMA") << kind << " " << dtype;
    EXPECT_FALSE(other->bounds_sol);
  }
}

// The experts' products run on the tensor cores too: a bf16 MoE's bound is their peak, not the
// fp32 FMA rate (an H100 bench set 182 TFLOP/s of one against the FMA peak, "2.99 of" it).
TEST(FamilySpeedOfLight, MixtureOfExpertsIsBoundByTheTensorCores) {
  const Calibration calibration = gpu_calibration();
  for (const char* problem :
       {"moe_qwen3_30b_a3b_top8_bf16", "moe_backward_qwen3_30b_a3b_ep16_bf16"}) {
    const Definition def = load_definition(fs::path(KERNELARC_SOURCE_DIR) / "problems/cuda" /
                                           problem / "definition.json");
    const auto peak = compute_peak(def, calibration);
    ASSERT_TRUE(peak.has_value()) << problem;
    EXPECT_EQ(peak->what, "bfloat16 tensor cores") << problem;
    EXPECT_TRUE(peak->bounds_sol) << problem;
  }
}

// An FP8 MoE's first input is its float32 router logits; its products read e4m3 operands, so the
// bound is the e4m3 tensor cores' (an H100 try reported "2.50 of the fp32 FMA peak").
TEST(FamilySpeedOfLight, AnFp8MixtureOfExpertsIsBoundByTheFp8TensorCores) {
  Calibration calibration = gpu_calibration();
  calibration.tensor_tflops["float8_e4m3fn"] = 1600;
  const Definition def =
      load_definition(fs::path(KERNELARC_SOURCE_DIR) /
                      "problems/cuda/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048/"
                      "definition.json");
  const auto peak = compute_peak(def, calibration);
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->what, "float8_e4m3fn tensor cores");
  EXPECT_DOUBLE_EQ(peak->flops_per_second, 1600e12);
  // Without an e4m3 figure the bf16 inputs' peak is the next narrowest measured one.
  calibration.tensor_tflops.erase("float8_e4m3fn");
  EXPECT_EQ(compute_peak(def, calibration)->what, "bfloat16 tensor cores");
}

// An NVFP4 cache on Hopper is dequantized in registers and multiplied in bf16 with the query: its
// e4m3 scales are no operand, so an e4m3 figure must not set the bound (an H100 bench printed
// "0.01 of the float8_e4m3fn tensor cores peak" for this problem).
TEST(FamilySpeedOfLight, AnNvfp4CacheIsMultipliedInTheQuerysType) {
  Calibration calibration = gpu_calibration();
  calibration.tensor_tflops["float8_e4m3fn"] = 1600;
  const Definition def = load_definition(fs::path(KERNELARC_SOURCE_DIR) /
                                         "problems/cuda/gqa_decode_nvfp4kv_q32_kv8_d128/"
                                         "definition.json");
  const auto peak = compute_peak(def, calibration);
  ASSERT_TRUE(peak.has_value());
  EXPECT_EQ(peak->what, "bfloat16 tensor cores");
  EXPECT_DOUBLE_EQ(peak->flops_per_second, 800e12);
  // A device with FP4 tensor cores multiplies the cache as it is stored.
  calibration.tensor_tflops["float4_e2m1fn_x2"] = 3200;
  EXPECT_EQ(compute_peak(def, calibration)->what, "float4_e2m1fn_x2 tensor cores");
}

}  // namespace
}  // namespace kernelarc
