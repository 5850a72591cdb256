// The guard on the bundled CPU problem rmsnorm_f32: honest solutions pass, each broken solution
// in tests/data/guard is rejected with the status its README promises.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/problem.h"
#include "eval/guard.h"
#include "eval/guard_harness.h"

namespace kernelarc {
namespace {

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;

class GuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    harness_ = std::make_unique<testing::GuardHarness>(
        kSource / "problems/cpu/rmsnorm_f32", "cpu", [](GuardOptions& options) {
          options.call_timeout = std::chrono::milliseconds(2000);
          options.iterations = 12;
          options.timing_budget_s = 0.2;
          options.memory_limit_bytes = std::size_t{2} << 30;
          options.time_baselines = false;
        });
  }
  static void TearDownTestSuite() { harness_.reset(); }

  /// The smallest workload keeps each broken case fast; every case sees the same one.
  static Trace evaluate_case(const std::string& name) {
    return harness_->evaluate(kSource / "tests/data/guard" / name, harness_->pick_workload(false));
  }

  static std::unique_ptr<testing::GuardHarness> harness_;
};

std::unique_ptr<testing::GuardHarness> GuardTest::harness_;

TEST_F(GuardTest, BundledSolutionsPassEveryWorkload) {
  for (const char* variant : {"naive", "optimized"}) {
    const auto solution =
        load_solution(kSource / "problems/cpu/rmsnorm_f32/solutions" / variant);
    for (const auto& trace : harness_->guard().evaluate(harness_->problem(), solution)) {
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
  EXPECT_THROW(harness_->guard().evaluate(harness_->problem(), solution), InputError);
}

}  // namespace
}  // namespace kernelarc
