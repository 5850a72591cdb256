// The guard on the CUDA problems: every bundled basic solution passes, each broken solution in
// tests/data/guard_cuda is rejected with the status its README promises, and work hidden on a
// stream of the solution's own is waited for and timed. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "eval/guard_harness.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

const std::filesystem::path kProblem = kSource / "problems/cuda/rmsnorm_bf16";

class GpuGuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Without a device nothing is set up; every test skips before touching it.
    if (cuda_device_count() == 0) return;
    harness_ =
        std::make_unique<testing::GuardHarness>(kProblem, "cuda:0", [](GuardOptions& options) {
          options.call_timeout = std::chrono::milliseconds(3000);
          options.iterations = 20;
          options.timing_budget_s = 0.3;
          options.time_baselines = false;
          options.auto_calibrate = false;  // calibrated once where a test needs the floor
        });
  }
  static void TearDownTestSuite() { harness_.reset(); }

  static Workload pick_workload(bool largest) { return harness_->pick_workload(largest); }
  static Trace evaluate(const std::filesystem::path& solution_dir, const Workload& workload) {
    return harness_->evaluate(solution_dir, workload);
  }

  static std::unique_ptr<testing::GuardHarness> harness_;
};

std::unique_ptr<testing::GuardHarness> GpuGuardTest::harness_;

TEST_F(GpuGuardTest, BasicSolutionsPassEveryWorkload) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  int problems = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "problems/cuda")) {
    // problems/cuda also holds tools, and suite problems no hand-written solution serves yet.
    if (!std::filesystem::exists(entry.path() / "definition.json") ||
        !std::filesystem::exists(entry.path() / "solutions/basic")) {
      continue;
    }
    ++problems;
    const auto problem = load_problem(entry.path());
    const auto solution = load_solution(entry.path() / "solutions/basic");
    const std::string name = entry.path().filename().string();
    for (const auto& trace : harness_->guard().evaluate(problem, solution)) {
      EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed))
          << name << " " << trace.workload.dump() << ": " << trace.log;
      EXPECT_EQ(trace.trials_passed, 10) << name;
      EXPECT_TRUE(trace.audit_passed) << name;
      EXPECT_TRUE(trace.latency_ms.has_value()) << name;
    }
    // Every call is a fresh draw: the draws of all problems' workloads together would fill the
    // GPU machine's disk (fused_add_rmsnorm's largest is 512 MiB a draw).
    std::filesystem::remove_all(harness_->workspace() / "oracle");
  }
  EXPECT_GE(problems, 6);
}

// The worker waits for the whole device, so work left running on another stream is neither
// missed by the correctness check nor by the clock. The factor only has to tell "timed" (about
// 1) from "missed" (a few microseconds of an empty kernel against the largest workload's).
TEST_F(GpuGuardTest, SideStreamWorkIsWaitedForAndTimed) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Workload largest = pick_workload(true);
  const auto basic = evaluate(kProblem / "solutions/basic", largest);
  const auto side = evaluate(kSource / "tests/data/guard_cuda/side_stream", largest);
  ASSERT_EQ(status_name(basic.status), status_name(EvalStatus::Passed)) << basic.log;
  ASSERT_EQ(status_name(side.status), status_name(EvalStatus::Passed)) << side.log;
  EXPECT_TRUE(side.audit_passed);
  ASSERT_TRUE(basic.latency_ms.has_value());
  ASSERT_TRUE(side.latency_ms.has_value());
  EXPECT_GE(side.latency_ms->median, 0.7 * basic.latency_ms->median)
      << "side stream timed by " << side.clock << ", basic by " << basic.clock;
}

struct Rejection {
  const char* name;
  EvalStatus status;
  const char* log_fragment;
  /// The case's defect only shows on a workload of at least this many rows.
  int64_t min_rows = 0;
};

void PrintTo(const Rejection& rejection, std::ostream* out) {
  *out << rejection.name;
}

class GpuGuardRejects : public GpuGuardTest, public ::testing::WithParamInterface<Rejection> {};

TEST_P(GpuGuardRejects, WithTheRightStatus) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& expected = GetParam();
  const auto trace = evaluate(kSource / "tests/data/guard_cuda" / expected.name,
                              harness_->pick_workload_of_at_least(expected.min_rows));
  EXPECT_EQ(status_name(trace.status), status_name(expected.status)) << trace.log;
  EXPECT_NE(trace.log.find(expected.log_fragment), std::string::npos) << trace.log;
}

// The instantiation's name starts with "Gpu" too: ctest's gpu label filters on the full name.
INSTANTIATE_TEST_SUITE_P(
    GpuBrokenSolutions, GpuGuardRejects,
    ::testing::Values(
        Rejection{"oob_write", EvalStatus::RuntimeError, "illegal memory access"},
        Rejection{"uninitialized_read", EvalStatus::IncorrectNumerical, "NaN"},
        Rejection{"skip_after_n", EvalStatus::IncorrectNumerical, "audit"},
        Rejection{"fault", EvalStatus::RuntimeError, "illegal memory access"},
        Rejection{"hang", EvalStatus::Timeout, "did not finish"},
        Rejection{"cache_by_pointer", EvalStatus::IncorrectNumerical, "output 'output'"},
        Rejection{"stale_output", EvalStatus::IncorrectNumerical, "trial 1"},
        Rejection{"writes_past_output", EvalStatus::RuntimeError, "past the end"},
        Rejection{"all_zero", EvalStatus::IncorrectNumerical, "all zeros"},
        Rejection{"modifies_input", EvalStatus::RewardHack, "modified its input"},
        Rejection{"launch_set_varies", EvalStatus::RewardHack, "differed"},
        Rejection{"grid_shrinks", EvalStatus::IncorrectNumerical, "audit at", 16},
        Rejection{"fork_child", EvalStatus::RuntimeError, "forbidden system call"},
        Rejection{"huge_allocation", EvalStatus::RuntimeError, "out of memory"},
        Rejection{"exit_mid_call", EvalStatus::RuntimeError, "exit"},
        Rejection{"lower_precision", EvalStatus::IncorrectNumerical, "exceed"},
        // One row is the same in either layout.
        Rejection{"wrong_layout", EvalStatus::IncorrectNumerical, "exceed", 2},
        Rejection{"cupti_disable", EvalStatus::RewardHack, "clock"},
        // Issue 24's classes where the CUDA worker differs from the CPU one.
        Rejection{"skips_unchecked_calls", EvalStatus::IncorrectNumerical, "audit at"},
        Rejection{"forges_reported_time", EvalStatus::RewardHack, "not the calls' real times"},
        Rejection{"patches_other_library", EvalStatus::RewardHack, "modified the worker"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kernelarc
