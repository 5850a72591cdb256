// The CUDA template of family "fused" (templates/cuda/fused) on a plan of each kernel kind
// (tests/data/fused_cuda): at its default knob point and at one other, every workload passes the
// guard against the definition's PyTorch reference; a plan that reads its input through the
// wrong strides fails numerically. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "eval/guard_harness.h"
#include "source_dir.h"
#include "synth/bound_template.h"
#include "synth/knob_point.h"

namespace kernelarc {
namespace {

const std::filesystem::path kProblems = kSource / "tests/data/fused_cuda";

/// Moves every knob the drivers branch on away from the default: narrower blocks and vectors,
/// no register cache, a block per row, small FMA tiles, no tensor cores and no cuBLASLt route.
constexpr const char* kOtherPoint =
    "BLOCK_THREADS=128,CACHE_VECS=0,ITEMS=1,MATMUL_LIBRARY=0,ROW_MAPPING=block,TENSOR_CORES=0,"
    "THREAD_M=2,THREAD_N=4,TILE_K=8,TILE_M=32,TILE_N=64,VEC=4";

const KernelTemplate& fused_cuda_template() {
  static const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  for (const KernelTemplate& kernel : library)
    if (kernel.name == "fused_cuda") return kernel;
  throw std::runtime_error("templates/cuda/fused is missing");
}

std::unique_ptr<testing::GuardHarness> make_harness(const std::string& problem) {
  return std::make_unique<testing::GuardHarness>(
      kProblems / problem, "cuda:0", [](GuardOptions& options) {
        options.correctness_trials = 2;
        options.warmup = 1;
        options.iterations = 5;
        options.timing_budget_s = 0.05;
        options.call_timeout = std::chrono::milliseconds(20000);
        options.time_baselines = false;
        options.auto_calibrate = false;  // calibrated once where a test needs the floor
      });
}

/// The traces of every workload at each point, the points compiled side by side first.
std::vector<std::vector<Trace>> evaluate_points(testing::GuardHarness& harness,
                                                const BoundTemplate& bound,
                                                const std::vector<KnobPoint>& points) {
  std::vector<Solution> solutions;
  for (const KnobPoint& point : points) solutions.push_back(bound.instantiate(point));
  harness.guard().prepare_builds();
  std::vector<std::future<bool>> builds;
  for (const Solution& solution : solutions) {
    builds.push_back(std::async(std::launch::async, [&harness, &solution] {
      return harness.guard().prebuild(harness.problem().definition, solution);
    }));
  }
  for (auto& build : builds) build.get();  // a failed build is reported by evaluate()
  std::vector<std::vector<Trace>> traces;
  for (const Solution& solution : solutions)
    traces.push_back(harness.guard().evaluate(harness.problem(), solution));
  return traces;
}

class GpuFusedGuard : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuFusedGuard, PassesAtTheDefaultAndAnotherPoint) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto harness = make_harness(GetParam());
  const BoundTemplate bound(fused_cuda_template(), harness->problem());
  const std::vector<KnobPoint> points = {bound.space().space().default_point(),
                                         parse_knob_point(kOtherPoint)};
  for (const KnobPoint& point : points) {
    ASSERT_TRUE(bound.space().is_valid(point)) << format_knob_point(point);
    ASSERT_EQ(bound.infeasible(point), std::nullopt) << format_knob_point(point);
  }
  const auto traces = evaluate_points(*harness, bound, points);
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_EQ(traces[i].size(), harness->problem().workloads.size());
    for (const Trace& trace : traces[i]) {
      EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed))
          << GetParam() << " at " << format_knob_point(points[i]) << ", workload "
          << trace.workload.value("uuid", std::string("?")) << ": " << trace.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    GpuFused, GpuFusedGuard,
    ::testing::Values("pointwise_bcast_bf16", "softmax_bf16", "mse_scalar", "sum_middle",
                      "argmax_middle", "cumsum_reverse_exclusive", "bmm_bias_gelu_bf16", "mm_f32",
                      "mm_residual_kn_bf16", "bmm_scaled_transposed_f16", "decoder_mlp_block_bf16",
                      "scatter_index_add", "topk_long_rows", "topk_route",
                      "conv2d_strided_bias_f32"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The plan of wrong_stride reads x transposed: it compiles and runs, and the guard must see the
// numbers are wrong.
TEST(GpuFusedGuardWrongPlan, FailsNumerically) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto harness = make_harness("wrong_stride");
  const BoundTemplate bound(fused_cuda_template(), harness->problem());
  const auto traces = evaluate_points(*harness, bound, {bound.space().space().default_point()});
  ASSERT_EQ(traces.front().size(), 1u);
  EXPECT_EQ(status_name(traces.front().front().status), status_name(EvalStatus::IncorrectNumerical))
      << traces.front().front().log;
}

}  // namespace
}  // namespace kernelarc
