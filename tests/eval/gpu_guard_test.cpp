// The guard on the CUDA problems: every bundled basic solution passes, each broken solution in
// tests/data/guard_cuda is rejected with the status its README promises, and work hidden on a
// stream of the solution's own is waited for and timed. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "backend/cuda_device.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "oracle/oracle.h"

namespace kernelarc {
namespace {

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;
const std::filesystem::path kProblem = kSource / "problems/cuda/rmsnorm_bf16";

int64_t workload_size(const Workload& workload) {
  int64_t size = 1;
  for (const auto& [name, value] : workload.axes) size *= value;
  return size;
}

class GpuGuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Without a device nothing is set up; every test skips before touching it.
    if (cuda_device_count() == 0) return;
    workspace_ = new std::filesystem::path(
        std::filesystem::temp_directory_path() /
        ("kernelarc-gpu-guard-test-" + std::to_string(getpid())));
    problem_ = new Problem(load_problem(kProblem));
    OracleOptions oracle_options;
    oracle_options.cache_dir = *workspace_ / "oracle";
    oracle_options.device = "cuda";
    oracle_options.worker_executable = KERNELARC_BINARY;
    oracle_ = new Oracle(oracle_options);
    GuardOptions options;
    options.device = "cuda:0";
    options.workspace = *workspace_;
    options.worker_executable = KERNELARC_BINARY;
    options.call_timeout = std::chrono::milliseconds(3000);
    options.iterations = 20;
    options.timing_budget_s = 0.3;
    options.time_baselines = false;
    guard_ = new Guard(options, *oracle_);
  }
  static void TearDownTestSuite() {
    delete guard_;
    delete oracle_;
    delete problem_;
    if (workspace_ != nullptr) std::filesystem::remove_all(*workspace_);
    delete workspace_;
    guard_ = nullptr;
    oracle_ = nullptr;
    problem_ = nullptr;
    workspace_ = nullptr;
  }

  /// The smallest (largest) workload of rmsnorm_bf16 by the product of its axes.
  static Workload pick_workload(bool largest) {
    const Workload* picked = &problem_->workloads.front();
    for (const auto& workload : problem_->workloads) {
      const bool bigger = workload_size(workload) > workload_size(*picked);
      const bool smaller = workload_size(workload) < workload_size(*picked);
      if (largest ? bigger : smaller) picked = &workload;
    }
    return *picked;
  }

  static Trace evaluate(const std::filesystem::path& solution_dir, const Workload& workload) {
    const auto solution = load_solution(solution_dir);
    const std::vector<Workload> workloads{workload};
    auto traces = guard_->evaluate(*problem_, solution, workloads);
    EXPECT_EQ(traces.size(), 1u);
    return traces.front();
  }

  static std::filesystem::path* workspace_;
  static Problem* problem_;
  static Oracle* oracle_;
  static Guard* guard_;
};

std::filesystem::path* GpuGuardTest::workspace_ = nullptr;
Problem* GpuGuardTest::problem_ = nullptr;
Oracle* GpuGuardTest::oracle_ = nullptr;
Guard* GpuGuardTest::guard_ = nullptr;

TEST_F(GpuGuardTest, BasicSolutionsPassEveryWorkload) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  int problems = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "problems/cuda")) {
    // problems/cuda also holds tools, which is no problem.
    if (!std::filesystem::exists(entry.path() / "definition.json")) continue;
    ++problems;
    const auto problem = load_problem(entry.path());
    const auto solution = load_solution(entry.path() / "solutions/basic");
    const std::string name = entry.path().filename().string();
    for (const auto& trace : guard_->evaluate(problem, solution)) {
      EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed))
          << name << " " << trace.workload.dump() << ": " << trace.log;
      EXPECT_EQ(trace.trials_passed, 10) << name;
      EXPECT_TRUE(trace.audit_passed) << name;
      EXPECT_TRUE(trace.latency_ms.has_value()) << name;
    }
  }
  EXPECT_GT(problems, 0);
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
};

void PrintTo(const Rejection& rejection, std::ostream* out) { *out << rejection.name; }

class GpuGuardRejects : public GpuGuardTest, public ::testing::WithParamInterface<Rejection> {};

TEST_P(GpuGuardRejects, WithTheRightStatus) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& expected = GetParam();
  const auto trace =
      evaluate(kSource / "tests/data/guard_cuda" / expected.name, pick_workload(false));
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
        Rejection{"hang", EvalStatus::Timeout, "did not finish"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kernelarc
