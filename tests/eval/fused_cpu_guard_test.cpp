// The CPU fused template through the real guard: one problem per kernel kind (tests/data/fused,
// each with its PyTorch reference) passes at the template's default knob point, and a plan with a
// wrong stride fails, which shows these problems can fail, and a scatter plan whose indices stray
// fails with the kernel's error.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "eval/guard_harness.h"
#include "source_dir.h"
#include "synth/bound_template.h"

namespace kernelarc {
namespace {

const std::vector<KernelTemplate>& library() {
  static const std::vector<KernelTemplate> templates = load_template_library(kSource / "templates");
  return templates;
}

// The guard's traces of the fused CPU template at its default point on every workload.
std::vector<Trace> evaluate_default_point(const std::string& problem_name) {
  testing::GuardHarness harness(
      kSource / "tests/data/fused" / problem_name, "cpu", [](GuardOptions& options) {
        options.correctness_trials = 2;
        options.warmup = 1;
        options.iterations = 3;
        options.timing_budget_s = 0.05;
        options.call_timeout = std::chrono::milliseconds(20000);
        options.time_baselines = false;
        options.auto_calibrate = false;  // calibrated once where a test needs the floor
      });
  const auto matches = match_templates(library(), harness.problem(), DeviceKind::Cpu);
  EXPECT_EQ(matches.size(), 1u);
  if (matches.size() != 1 || !matches[0].bound) {
    ADD_FAILURE() << "fused_cpu does not bind: " << (matches.empty() ? "" : matches[0].reason);
    return {};
  }
  const BoundTemplate& bound = *matches[0].bound;
  const Solution solution = bound.instantiate(bound.space().space().default_point());
  return harness.guard().evaluate(harness.problem(), solution, harness.problem().workloads);
}

class FusedCpuGuard : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedCpuGuard, PassesAtTheDefaultPoint) {
  const std::vector<Trace> traces = evaluate_default_point(GetParam());
  EXPECT_FALSE(traces.empty());
  for (const Trace& trace : traces) {
    EXPECT_EQ(trace.status, EvalStatus::Passed)
        << GetParam() << ", workload " << trace.workload.value("uuid", std::string("?")) << ": "
        << trace.log;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, FusedCpuGuard,
                         ::testing::Values("pointwise_bcast_bf16", "softmax_two_stage",
                                           "argmax_middle", "mse_scalar",
                                           "cumsum_reverse_exclusive", "bmm_bias_relu",
                                           "cross_entropy_gather", "mm_f32", "scatter_index_add",
                                           "topk_route", "conv2d_strided_bias_f32"));

TEST(FusedCpuGuardWrongPlan, AWrongStrideFailsNumerically) {
  const std::vector<Trace> traces = evaluate_default_point("wrong_stride");
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].status, EvalStatus::IncorrectNumerical) << traces[0].log;
}

// A scatter whose indices all lie past its destination (a defect of a hand-written plan that no
// static check can see): the generated code skips every store and the call fails naming the
// kernel, instead of writing outside the output.
TEST(FusedCpuGuardWrongPlan, AStrayScatterIndexIsARuntimeError) {
  const std::vector<Trace> traces = evaluate_default_point("scatter_stray_index");
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].status, EvalStatus::RuntimeError) << traces[0].log;
  EXPECT_NE(traces[0].log.find("kernels[1] (scatter): an index is out of range"), std::string::npos)
      << traces[0].log;
}

}  // namespace
}  // namespace kernelarc
