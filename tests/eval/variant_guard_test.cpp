// Per-shape dispatch inside one solution (kernelarc.variants): the guard builds the solution once
// per variant in use and runs each workload with the variant its axes select, and a malformed
// variant is an input error that names its field. On a GPU: the SwiGLU MLP of a Llama-3-8B layer
// with its fused gate/up route at decode shapes and cuBLASLt's elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "core/error.h"
#include "eval/guard_harness.h"
#include "eval/solution_variants.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/knob_point.h"

namespace kernelarc {
namespace {

void tune(GuardOptions& options) {
  options.call_timeout = std::chrono::milliseconds(2000);
  options.iterations = 5;
  options.timing_budget_s = 0.1;
  options.correctness_trials = 2;
  options.time_baselines = false;
  options.auto_calibrate = false;  // calibrated once where a test needs the floor
}

/// The bundled naive RMSNorm, which only compiles with KA_TEST_MODE=1: a build with any other
/// knobs reports itself as a compile error, so each trace shows which knobs built its workload.
Solution mode_gated_naive() {
  Solution solution = load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions/naive");
  for (SourceFile& source : solution.sources) {
    if (source.path == solution.entry_file) {
      source.content = "#if KA_TEST_MODE != 1\n#error \"built with KA_TEST_MODE != 1\"\n#endif\n" +
                       source.content;
    }
  }
  solution.ext["knobs"] = {{"KA_TEST_MODE", 0}};
  return solution;
}

class VariantGuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Problem problem = load_problem(kSource / "problems/cpu/rmsnorm_f32");
    // Two small workloads: (batch_size 1, hidden 4096) and (33, 3).
    std::erase_if(problem.workloads, [](const Workload& w) {
      return !(w.axes.at("batch_size") == 1 || w.axes.at("batch_size") == 33);
    });
    harness_ = std::make_unique<testing::GuardHarness>(std::move(problem), "cpu", tune);
  }
  static void TearDownTestSuite() { harness_.reset(); }
  static std::unique_ptr<testing::GuardHarness> harness_;
};

std::unique_ptr<testing::GuardHarness> VariantGuardTest::harness_;

TEST_F(VariantGuardTest, EachWorkloadRunsTheVariantItsAxesSelect) {
  const Solution solution = with_variants(
      mode_gated_naive(), {{"batch_size == 1", {{"KA_TEST_MODE", 1}}, "KA_TEST_MODE=1"}});
  const auto traces = harness_->guard().evaluate(harness_->problem(), solution);
  ASSERT_EQ(traces.size(), 2u);
  for (const Trace& trace : traces) {
    const int64_t batch = trace.workload["axes"]["batch_size"].get<int64_t>();
    ASSERT_TRUE(trace.extra.contains("variant")) << trace.extra.dump();
    if (batch == 1) {
      EXPECT_EQ(trace.status, EvalStatus::Passed) << trace.log;
      EXPECT_EQ(trace.extra["variant"]["index"], 0);
      EXPECT_EQ(trace.extra["variant"]["knobs"]["KA_TEST_MODE"], 1);
    } else {
      EXPECT_EQ(trace.status, EvalStatus::CompileError);
      EXPECT_NE(trace.log.find("built with KA_TEST_MODE != 1"), std::string::npos) << trace.log;
      EXPECT_TRUE(trace.extra["variant"]["index"].is_null());
      EXPECT_EQ(trace.extra["variant"]["when"], "otherwise");
    }
  }
}

TEST_F(VariantGuardTest, TheFirstMatchingVariantWinsAndEveryWorkloadCanBeServed) {
  // The first variant matches both workloads; the second would break the (33, 3) one.
  const Solution solution =
      with_variants(mode_gated_naive(), {{"batch_size >= 1", {{"KA_TEST_MODE", 1}}, ""},
                                         {"batch_size == 33", {{"KA_TEST_MODE", 2}}, ""}});
  for (const Trace& trace : harness_->guard().evaluate(harness_->problem(), solution)) {
    EXPECT_EQ(trace.status, EvalStatus::Passed) << trace.log;
    EXPECT_EQ(trace.extra["variant"]["index"], 0);
  }
}

TEST_F(VariantGuardTest, MalformedVariantsNameTheirField) {
  auto expect_error = [&](const OrderedJson& variants, const std::string& field,
                          const std::string& what) {
    Solution solution = mode_gated_naive();
    solution.ext["variants"] = variants;
    try {
      harness_->guard().evaluate(harness_->problem(), solution);
      ADD_FAILURE() << "accepted " << variants.dump();
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(field), std::string::npos) << message;
      EXPECT_NE(message.find(what), std::string::npos) << message;
      EXPECT_NE(message.find("solution.json"), std::string::npos) << message;
    }
  };
  expect_error({{"when", "hiden_size > 4"}, {"knobs", {{"KA_TEST_MODE", 1}}}}, "kernelarc.variants",
               "expected a list");
  expect_error(OrderedJson::array({{{"when", "hiden_size > 4"}, {"knobs", {{"KA_TEST_MODE", 1}}}}}),
               "kernelarc.variants[0].when", "'hiden_size' is not an axis");
  expect_error(OrderedJson::array({{{"when", "batch_size >"}, {"knobs", OrderedJson::object()}}}),
               "kernelarc.variants[0].when", "column");
  expect_error(
      OrderedJson::array({{{"when", "batch_size > 1"}, {"knobs", {{"KA_TEST_MODE", 1.5}}}}}),
      "kernelarc.variants[0].knobs", "expected an integer");
  expect_error(OrderedJson::array({{{"when", "batch_size > 1"}}}), "kernelarc.variants[0].knobs",
               "missing");
  expect_error(OrderedJson::array(
                   {{{"when", "batch_size > 1"}, {"knobs", OrderedJson::object()}, {"where", 1}}}),
               "kernelarc.variants[0].where", "unknown member");
}

TEST(SolutionVariants, ResolvingReplacesTheKnobsAndTheTemplatePoint) {
  Solution solution;
  solution.ext = {{"knobs", {{"A", 1}}}, {"template", {{"name", "t"}, {"point", "A=1"}}}};
  const std::vector<SolutionVariant> variants{{"n > 8", {{"A", 2}}, "A=2"}};
  const Solution dispatching = with_variants(solution, variants);
  EXPECT_NE(dispatching.name, solution.name);
  const Solution big = resolve_variant(dispatching, variants, 0);
  EXPECT_EQ(big.ext["knobs"]["A"], 2);
  EXPECT_EQ(big.ext["template"]["point"], "A=2");
  EXPECT_FALSE(big.ext.contains("variants"));
  const Solution small = resolve_variant(dispatching, variants, std::nullopt);
  EXPECT_EQ(small.ext["knobs"]["A"], 1);
  EXPECT_FALSE(small.ext.contains("variants"));
  EXPECT_EQ(select_variant(dispatching, variants, {{"n", 9}}), std::optional<std::size_t>(0));
  EXPECT_EQ(select_variant(dispatching, variants, {{"n", 8}}), std::nullopt);
}

// The mlp_gated template at its default point (FUSE_GATE_UP=0: cuBLASLt's gate and up GEMMs, a
// pointwise pass, cuBLASLt's down GEMM) with one variant, the fused gate/up GEMM at 16-row
// tiles, for the decode-sized shapes: the two routes are different builds, and each must pass
// the guard at the shapes it serves.
TEST(GpuVariantGuard, TheMlpTakesItsFusedRouteAtDecodeShapesAndCublasLtElsewhere) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Problem problem = load_problem(kSource / "problems/cuda/swiglu_mlp_bf16_h4096_i14336");
  std::erase_if(problem.workloads, [](const Workload& w) {
    const int64_t tokens = w.axes.at("num_tokens");
    return tokens != 1 && tokens != 7 && tokens != 128;
  });
  ASSERT_EQ(problem.workloads.size(), 3u);
  testing::GuardHarness harness(std::move(problem), "cuda:0", [](GuardOptions& options) {
    tune(options);
    options.call_timeout = std::chrono::milliseconds(20000);
  });
  const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  const auto kernel = std::find_if(library.begin(), library.end(),
                                   [](const KernelTemplate& t) { return t.name == "mlp_gated"; });
  ASSERT_NE(kernel, library.end());
  const BoundTemplate bound(*kernel, harness.problem());
  const KnobPoint base_point = bound.space().space().default_point();
  KnobPoint fused_point = base_point;
  for (const auto& [name, value] : parse_knob_point("FUSE_GATE_UP=1,BM=16,WARPS_M=1,BN=64"))
    fused_point[name] = value;
  ASSERT_TRUE(bound.space().is_valid(fused_point));
  const Solution fused = bound.instantiate(fused_point);
  const Solution solution =
      with_variants(bound.instantiate(base_point),
                    {{"num_tokens <= 16", fused.ext["knobs"], format_knob_point(fused_point)}});
  const auto traces = harness.guard().evaluate(harness.problem(), solution);
  ASSERT_EQ(traces.size(), 3u);
  for (const Trace& trace : traces) {
    const int64_t tokens = trace.workload["axes"]["num_tokens"].get<int64_t>();
    EXPECT_EQ(trace.status, EvalStatus::Passed) << tokens << " tokens: " << trace.log;
    ASSERT_TRUE(trace.extra.contains("variant")) << trace.extra.dump();
    if (tokens <= 16) {
      EXPECT_EQ(trace.extra["variant"]["index"], 0) << tokens << " tokens";
      EXPECT_EQ(trace.extra["variant"]["knobs"]["FUSE_GATE_UP"], 1);
    } else {
      EXPECT_TRUE(trace.extra["variant"]["index"].is_null()) << tokens << " tokens";
    }
  }
}

}  // namespace
}  // namespace kernelarc
