// The guard on the bundled CPU problem rmsnorm_f32: honest solutions pass, each broken solution
// in tests/data/guard is rejected with the status its README promises.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "oracle/oracle.h"

namespace kernelarc {
namespace {

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;

class GuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    workspace_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                           ("kernelarc-guard-test-" + std::to_string(getpid())));
    problem_ = new Problem(load_problem(kSource / "problems/cpu/rmsnorm_f32"));
    OracleOptions oracle_options;
    oracle_options.cache_dir = *workspace_ / "oracle";
    oracle_options.worker_executable = KERNELARC_BINARY;
    oracle_ = new Oracle(oracle_options);
    GuardOptions options;
    options.workspace = *workspace_;
    options.worker_executable = KERNELARC_BINARY;
    options.call_timeout = std::chrono::milliseconds(2000);
    options.iterations = 12;
    options.timing_budget_s = 0.2;
    options.memory_limit_bytes = std::size_t{2} << 30;
    options.time_baselines = false;
    guard_ = new Guard(options, *oracle_);
  }
  static void TearDownTestSuite() {
    delete guard_;
    delete oracle_;
    delete problem_;
    std::filesystem::remove_all(*workspace_);
    delete workspace_;
  }

  /// The smallest workload keeps each case fast; every case sees the same one.
  static std::vector<Workload> small_workload() {
    const Workload* smallest = &problem_->workloads.front();
    for (const auto& workload : problem_->workloads) {
      int64_t size = 1, smallest_size = 1;
      for (const auto& [name, value] : workload.axes) size *= value;
      for (const auto& [name, value] : smallest->axes) smallest_size *= value;
      if (size < smallest_size) smallest = &workload;
    }
    return {*smallest};
  }

  static Trace evaluate_case(const std::string& name) {
    const auto solution = load_solution(kSource / "tests/data/guard" / name);
    auto traces = guard_->evaluate(*problem_, solution, small_workload());
    EXPECT_EQ(traces.size(), 1u);
    return traces.front();
  }

  static std::filesystem::path* workspace_;
  static Problem* problem_;
  static Oracle* oracle_;
  static Guard* guard_;
};

std::filesystem::path* GuardTest::workspace_ = nullptr;
Problem* GuardTest::problem_ = nullptr;
Oracle* GuardTest::oracle_ = nullptr;
Guard* GuardTest::guard_ = nullptr;

TEST_F(GuardTest, BundledSolutionsPassEveryWorkload) {
  for (const char* variant : {"naive", "optimized"}) {
    const auto solution =
        load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions" / variant);
    for (const auto& trace : guard_->evaluate(*problem_, solution)) {
      EXPECT_EQ(trace.status, EvalStatus::Passed) << variant << ": " << trace.log;
      EXPECT_EQ(trace.trials_passed, 10);
      EXPECT_TRUE(trace.audit_passed);
      ASSERT_TRUE(trace.latency_ms.has_value());
      EXPECT_GE(trace.latency_ms->samples, 10);
      EXPECT_LE(trace.latency_ms->ci_low, trace.latency_ms->median);
      EXPECT_GE(trace.latency_ms->ci_high, trace.latency_ms->median);
    }
  }
}

struct Rejection {
  const char* name;
  EvalStatus status;
  const char* log_fragment;
};

class GuardRejects : public GuardTest, public ::testing::WithParamInterface<Rejection> {};

TEST_P(GuardRejects, WithTheRightStatus) {
  const auto& expected = GetParam();
  const auto trace = evaluate_case(expected.name);
  EXPECT_EQ(status_name(trace.status), status_name(expected.status)) << trace.log;
  EXPECT_NE(trace.log.find(expected.log_fragment), std::string::npos) << trace.log;
}

INSTANTIATE_TEST_SUITE_P(
    BrokenSolutions, GuardRejects,
    ::testing::Values(
        Rejection{"wrong_result", EvalStatus::IncorrectNumerical, "exceed atol"},
        Rejection{"partial_write", EvalStatus::IncorrectNumerical, "never written"},
        Rejection{"nan_output", EvalStatus::IncorrectNumerical, "NaN"},
        Rejection{"all_zero", EvalStatus::IncorrectNumerical, "all zeros"},
        Rejection{"modifies_input", EvalStatus::RewardHack, "modified its input"},
        Rejection{"crash", EvalStatus::RuntimeError, "SIGSEGV"},
        Rejection{"hang", EvalStatus::Timeout, "did not finish"},
        Rejection{"compile_error", EvalStatus::CompileError, "error"},
        Rejection{"returns_error", EvalStatus::RuntimeError, "unsupported shape"},
        Rejection{"wrong_after_first_calls", EvalStatus::IncorrectNumerical, "audit"},
        Rejection{"exit_mid_call", EvalStatus::RuntimeError, "exit"},
        Rejection{"huge_allocation", EvalStatus::RuntimeError, "memory"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(GuardTest, SolutionForAnotherDefinitionIsAnInputError) {
  auto solution = load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions/naive");
  solution.definition = "softmax_f32";
  EXPECT_THROW(guard_->evaluate(*problem_, solution), InputError);
}

}  // namespace
}  // namespace kernelarc
